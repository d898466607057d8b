package tablemarker

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var golden = Marker{
	RunID: "2024-06-01", Window: "global", Table: "lake.events", SnapshotID: 4_611_686_018_427_387_904,
	Files: 12, FilesSHA256: strings.Repeat("0123456789abcdef", 4),
}

func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "marker.golden")
	got := Encode(golden)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode:\n%s\nwant the golden bytes:\n%s", got, want)
	}
	m, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	golden.Version = version
	if m != golden {
		t.Errorf("Decode = %+v, want %+v", m, golden)
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := string(Encode(golden))
	for name, b := range map[string]string{
		"empty":            "",
		"not json":         "run",
		"unknown field":    strings.Replace(good, `"version":1`, `"version":1,"x":1`, 1),
		"later version":    strings.Replace(good, `"version":1`, `"version":2`, 1),
		"no run id":        strings.Replace(good, `"run_id":"2024-06-01"`, `"run_id":""`, 1),
		"short digest":     strings.Replace(good, `"files_sha256":"0123`, `"files_sha256":"23`, 1),
		"no newline":       strings.TrimSuffix(good, "\n"),
		"spaces":           strings.Replace(good, `,"window"`, `, "window"`, 1),
		"negative files":   strings.Replace(good, `"files":12`, `"files":-1`, 1),
		"too large":        good + strings.Repeat(" ", MaxBytes),
		"fields reordered": strings.Replace(good, `"run_id":"2024-06-01","window":"global"`, `"window":"global","run_id":"2024-06-01"`, 1),
	} {
		if _, err := Decode([]byte(b)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Decode(%q) = %v, want ErrInvalid", name, b, err)
		}
	}
}

func TestKey(t *testing.T) {
	k := Key("lake/events/data/2024-06-01", "global")
	if k != "lake/events/data/2024-06-01/_s3once_table_commit-global" {
		t.Errorf("Key = %q", k)
	}
	if w, ok := IsKey("lake/events/data/2024-06-01/", k); !ok || w != "global" {
		t.Errorf("IsKey(%q) = %q, %v", k, w, ok)
	}
	for _, other := range []string{"lake/events/data/2024-06-01/_s3once_table_commit-", "lake/events/data/2024-06-01/x/_s3once_table_commit-global", "lake/events/data/2024-06-02/_s3once_table_commit-global"} {
		if _, ok := IsKey("lake/events/data/2024-06-01", other); ok {
			t.Errorf("IsKey(%q) is true", other)
		}
	}
}

func FuzzDecodeTableMarker(f *testing.F) {
	f.Add(Encode(golden))
	f.Add([]byte(`{"run_id":"a"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if !bytes.Equal(Encode(m), b) {
			t.Fatalf("Decode accepted %q, which Encode writes as %q", b, Encode(m))
		}
	})
}
