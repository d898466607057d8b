package settingsmarker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/s3once/s3once/errcode"
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
	for _, ms := range []Settings{
		nil,
		{{"a", ""}},
		{{"a", "%"}, {"b", "%25"}, {"c", string(every)}},
		{{"0", "x"}, {"9-a", "y"}, {"a", "="}, {strings.Repeat("z", 64), " spaces  at both ends "}},
	} {
		b := Encode(ms)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%q)) = %v (bytes %q)", ms, err, b)
		}
		if !slices.Equal(got, ms) {
			t.Fatalf("round trip of %q gave %q", ms, got)
		}
	}
	ms := goldens()["settings_v1.txt"]
	if v, ok := ms.Get("output-version"); !ok || v != "1" {
		t.Fatalf("Get(output-version) = %q, %v", v, ok)
	}
	if v, ok := ms.Get("parquet-library"); !ok || v != "" {
		t.Fatalf("Get of an empty setting = %q, %v; want \"\", true", v, ok)
	}
	if _, ok := ms.Get("no-such-setting"); ok {
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
	// Real markers cut at a line boundary, the header line only among them.
	for _, m := range pairMarkers(f) {
		lines := bytes.SplitAfter(m.b, []byte{'\n'})
		for _, n := range []int{1, 2, 5, len(lines) - 2} {
			f.Add(bytes.Join(lines[:n], nil))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode(%q) failed without ErrInvalid: %v", b, err)
			}
			return
		}
		if enc := Encode(ms); !bytes.Equal(enc, b) {
			t.Fatalf("%q decodes to %q, which encodes to %q", b, ms, enc)
		}
		err = Check(ms)
		var d *DamagedError
		if err != nil && (!errors.Is(err, ErrDamaged) || !errors.As(err, &d) || len(d.Missing)+len(d.Empty) == 0) {
			t.Fatalf("Check(%q) = %v", ms, err)
		}
		for _, name := range required {
			if _, ok := ms.Get(name); !ok && err == nil {
				t.Fatalf("Check takes %q, which lacks %s", ms, name)
			}
		}
	})
}

// pairMarker is a marker the sink writes for a (format, compression) pair
// (testdata/pairs, kept equal to the sink's by its TestSettingsMarkerPerPair).
type pairMarker struct {
	name string
	b    []byte
}

func pairMarkers(t testing.TB) []pairMarker {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "pairs", "*.txt"))
	if err != nil || len(names) < 6 {
		t.Fatalf("testdata/pairs: %v, %v", names, err)
	}
	var out []pairMarker
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pairMarker{filepath.Base(n), b})
	}
	// The golden marker of the first release that wrote markers: no
	// setting of Optional.
	b, err := os.ReadFile(filepath.Join("testdata", "settings_v1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, pairMarker{"settings_v1.txt", b})
}

// TestCheckCutMarkers: a real marker of every (format, compression) pair,
// cut at every line boundary (down to its header line), is damaged, typed,
// naming exactly the required settings it lost; the whole marker, and one
// of an earlier release (without the settings of Optional), is taken.
func TestCheckCutMarkers(t *testing.T) {
	for _, m := range pairMarkers(t) {
		ms, err := Decode(m.b)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if err := Check(ms); err != nil {
			t.Fatalf("%s: the whole marker: %v", m.name, err)
		}
		var old Settings
		for _, s := range ms {
			if !slices.Contains(Optional(), s.Name) {
				old = append(old, s)
			}
		}
		if err := Check(old); err != nil {
			t.Errorf("%s: the marker without the settings added later: %v", m.name, err)
		}
		lines := bytes.SplitAfter(m.b, []byte{'\n'})
		lines = lines[:len(lines)-1] // the empty string after the last newline
		for n := 1; n < len(lines); n++ {
			cut := bytes.Join(lines[:n], nil)
			part, err := Decode(cut)
			if err != nil {
				t.Fatalf("%s cut to %d lines does not decode: %v", m.name, n, err)
			}
			var want []string
			for _, name := range required {
				if _, ok := part.Get(name); !ok {
					want = append(want, name)
				}
			}
			err = Check(part)
			var d *DamagedError
			if !errors.Is(err, ErrDamaged) || !errors.As(err, &d) || !slices.Equal(d.Missing, want) || len(want) == 0 {
				t.Errorf("%s cut to %d lines: %v; want the settings %q missing", m.name, n, err, want)
				continue
			}
			if !errcode.Has(errors.New(err.Error()), errcode.SettingsDamaged) {
				t.Errorf("%s cut to %d lines: %q lacks its code", m.name, n, err)
			}
			if n == 1 && !strings.Contains(err.Error(), "holds no setting but its header line") {
				t.Errorf("the header line of %s: %v", m.name, err)
			}
			if n > 1 && !strings.Contains(err.Error(), "lacks settings "+strings.Join(want, ", ")+" (damaged: truncated or edited outside s3once)") {
				t.Errorf("%s cut to %d lines: %v", m.name, n, err)
			}
		}
		// A line taken out: damaged where the setting is required, taken
		// where it is optional.
		for i, s := range ms {
			rest := slices.Delete(slices.Clone(ms), i, i+1)
			err := Check(rest)
			if slices.Contains(Optional(), s.Name) {
				if err != nil {
					t.Errorf("%s without %s: %v", m.name, s.Name, err)
				}
				continue
			}
			var d *DamagedError
			if !errors.As(err, &d) || !slices.Equal(d.Missing, []string{s.Name}) {
				t.Errorf("%s without %s: %v", m.name, s.Name, err)
			}
		}
	}
}

// TestRequiredTable: which settings hold a value depends on the format and
// the compression as docs/operating.md tables it; every pair holds every
// required setting; a value left empty where the table asks for one is
// damage.
func TestRequiredTable(t *testing.T) {
	always := []string{"compression", "file-names", "format", "max-batch-bytes", "max-file-bytes", "max-file-records", "output-version", "shards"}
	codec := []string{"checkpoint-sync-bytes", "compression-library"}
	pq := []string{"parquet-compression", "parquet-library", "parquet-row-group-bytes", "parquet-row-group-records"}
	for _, tc := range []struct {
		format, compression string
		valued              []string
	}{
		{"text", "none", always},
		{"jsonl", "none", always},
		{"csv", "none", always},
		{"text", "gzip", append(slices.Clone(always), codec...)},
		{"jsonl", "zstd", append(slices.Clone(always), codec...)},
		{"csv", "my-codec", append(slices.Clone(always), codec...)},
		{"parquet", "none", append(slices.Clone(always), pq...)},
		{"my-format", "none", always},
	} {
		rows := Required(tc.format, tc.compression)
		var names, valued []string
		for _, r := range rows {
			names = append(names, r.Name)
			if r.Value {
				valued = append(valued, r.Name)
			}
		}
		if !slices.Equal(names, required) {
			t.Errorf("%s/%s: rows %q", tc.format, tc.compression, names)
		}
		slices.Sort(valued)
		want := slices.Sorted(slices.Values(tc.valued))
		if !slices.Equal(valued, want) {
			t.Errorf("%s/%s: valued %q, want %q", tc.format, tc.compression, valued, want)
		}
	}
	for _, m := range pairMarkers(t) {
		ms, _ := Decode(m.b)
		format, _ := ms.Get("format")
		compression, _ := ms.Get("compression")
		for _, r := range Required(format, compression) {
			if !r.Value {
				continue
			}
			blank := slices.Clone(ms)
			i := slices.IndexFunc(blank, func(s Setting) bool { return s.Name == r.Name })
			blank[i].Value = ""
			var d *DamagedError
			if err := Check(blank); !errors.As(err, &d) || !slices.Equal(d.Empty, []string{r.Name}) || len(d.Missing) != 0 ||
				!strings.Contains(err.Error(), "leaves settings "+r.Name+" empty") {
				t.Errorf("%s with %s empty: %v", m.name, r.Name, err)
			}
		}
	}
	if got := Optional(); !slices.Equal(got, []string{"compression-canary", "parquet-canary", "shard-target-bytes"}) {
		t.Errorf("Optional() = %q", got)
	}
}

// TestCheckEditedValues: a marker whose counts were edited into values no
// release writes is damaged, naming them; a count edited into another
// count is a change of settings, for the comparison to find.
func TestCheckEditedValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "pairs", "text-gzip.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(ms); err != nil {
		t.Fatalf("the intact marker: %v", err)
	}
	for name, value := range map[string]string{"shards": "3x", "max-file-records": "-1", "output-version": "0", "max-batch-bytes": "010"} {
		edited := slices.Clone(ms)
		for i := range edited {
			if edited[i].Name == name {
				edited[i].Value = value
			}
		}
		var d *DamagedError
		if err := Check(edited); !errors.As(err, &d) || !slices.Contains(d.Invalid, name) || !errors.Is(err, ErrDamaged) {
			t.Errorf("%s=%q: %v; want damaged, naming it", name, value, err)
		}
	}
	for name, value := range map[string]string{"shards": "auto:4", "max-file-bytes": "0"} {
		edited := slices.Clone(ms)
		for i := range edited {
			if edited[i].Name == name {
				edited[i].Value = value
			}
		}
		if err := Check(edited); err != nil {
			t.Errorf("%s=%q, a value a release writes: %v", name, value, err)
		}
	}
}
