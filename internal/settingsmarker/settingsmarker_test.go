package settingsmarker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goldens are the markers under testdata (the same bytes as the sink's
// goldens) and the settings each holds.
func goldens() map[string]Settings {
	return map[string]Settings{
		"settings_v1.txt": {
			{"checkpoint-sync-bytes", "1048576"},
			{"compression", "gzip"},
			{"compression-library", "github.com/klauspost/compress v1.19.2"},
			{"file-names", "<destination>/<window>-pane-<n>-shard-<SSSSS>-of-<NNNNN>[-batch-<BB>-of-<MM>]-file-<FFFFF>.jsonl.gz"},
			{"format", "jsonl"},
			{"max-batch-bytes", "67108864"},
			{"max-file-bytes", "67108864"},
			{"max-file-records", "0"},
			{"output-version", "1"},
			{"parquet-compression", ""},
			{"parquet-library", ""},
			{"parquet-row-group-bytes", ""},
			{"parquet-row-group-records", ""},
			{"shards", "8"},
		},
		"settings_v1_escapes.txt": {
			{"compression", "my%codec\nline\x00\xff"},
			{"format", "text"},
			{"z-future-setting", "= kept as is ="},
		},
	}
}

func TestGolden(t *testing.T) {
	for name, want := range goldens() {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if enc := Encode(want); !bytes.Equal(enc, b) {
			t.Errorf("%s: Encode wrote\n%q\nwant\n%q", name, enc, b)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Decode = %q, want %q", name, got, want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	for _, fp := range []Settings{
		nil,
		{{"a", ""}},
		{{"a", "%"}, {"b", "%25"}, {"c", string(every)}},
		{{"0", "x"}, {"9-a", "y"}, {"a", "="}, {strings.Repeat("z", 64), " spaces  at both ends "}},
	} {
		b := Encode(fp)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%q)) = %v (bytes %q)", fp, err, b)
		}
		if !slices.Equal(got, fp) {
			t.Fatalf("round trip of %q gave %q", fp, got)
		}
	}
	fp := goldens()["settings_v1.txt"]
	if v, ok := fp.Get("output-version"); !ok || v != "1" {
		t.Fatalf("Get(output-version) = %q, %v", v, ok)
	}
	if v, ok := fp.Get("parquet-library"); !ok || v != "" {
		t.Fatalf("Get of an empty setting = %q, %v; want \"\", true", v, ok)
	}
	if _, ok := fp.Get("no-such-setting"); ok {
		t.Fatal("Get found a setting the marker does not have")
	}
}

// TestDecodeRefuses: anything but the one encoding of some settings is
// refused, with ErrInvalid.
func TestDecodeRefuses(t *testing.T) {
	const head = "s3once-settings 1\n"
	for name, in := range map[string]string{
		"empty":                     "",
		"no header":                 "format=jsonl\n",
		"header without newline":    "s3once-settings 1",
		"a later version":           "s3once-settings 2\n",
		"version 0":                 "s3once-settings 0\n",
		"version with leading zero": "s3once-settings 01\n",
		"version with sign":         "s3once-settings +1\n",
		"no version":                "s3once-settings \n",
		"CRLF header":               "s3once-settings 1\r\n",
		"last line without newline": head + "format=jsonl",
		"a blank line":              head + "\n",
		"no equals sign":            head + "format\n",
		"empty name":                head + "=x\n",
		"upper-case name":           head + "Format=x\n",
		"name with a space":         head + "for mat=x\n",
		"name too long":             head + strings.Repeat("a", 65) + "=x\n",
		"names out of order":        head + "format=a\ncompression=b\n",
		"a name twice":              head + "format=a\nformat=a\n",
		"lower-case escape":         head + "a=%0a\n",
		"needless escape":           head + "a=%41\n",
		"escaped space":             head + "a=%20\n",
		"cut escape":                head + "a=%0\n",
		"escape not hex":            head + "a=%G0\n",
		"raw tab":                   head + "a=\t\n",
		"raw DEL":                   head + "a=\x7f\n",
		"raw high byte":             head + "a=\xc3\xa9\n",
		"raw CR":                    head + "a=b\r\n",
		"too large":                 head + "a=" + strings.Repeat("x", MaxBytes) + "\n",
	} {
		if got, err := Decode([]byte(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Decode(%.80q) = %q, %v; want ErrInvalid", name, in, got, err)
		}
	}
	if _, err := Decode([]byte(head + "a=%25%0A\n")); err != nil {
		t.Fatalf("a canonical marker is refused: %v", err)
	}
}

// FuzzDecodeSettingsMarker: Decode never panics, and what it takes encodes
// back to the same bytes (one encoding per settings).
func FuzzDecodeSettingsMarker(f *testing.F) {
	for name := range goldens() {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("s3once-settings 1\nformat=%25%0A\n"))
	f.Add([]byte("s3once-settings 2\n"))
	f.Add([]byte("s3once-settings 1\na=\nb=%FF\n"))
	f.Add([]byte("s3once-settings 1\nb=\na=\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fp, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode(%q) failed without ErrInvalid: %v", b, err)
			}
			return
		}
		if enc := Encode(fp); !bytes.Equal(enc, b) {
			t.Fatalf("%q decodes to %q, which encodes to %q", b, fp, enc)
		}
	})
}
