package sink

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/testkit/golden"
)

// goldenMarkers is a marker's content as a build with known library
// versions records it for JSON lines, gzip, 8 shards; and one with bytes that
// need escapes (a program's own codec name).
func goldenMarkers() map[string]markerSettings {
	lib := "github.com/klauspost/compress v1.19.2"
	jsonl := markerSettings{
		{Name: "checkpoint-sync-bytes", Value: "1048576"},
		{Name: "compression", Value: "gzip"},
		{Name: "compression-library", Value: lib},
		{Name: "file-names", Value: fileNames + ".jsonl.gz"},
		{Name: "format", Value: "jsonl"},
		{Name: "max-batch-bytes", Value: "67108864"},
		{Name: "max-file-bytes", Value: "67108864"},
		{Name: "max-file-records", Value: "0"},
		{Name: "output-version", Value: "1"},
		{Name: "parquet-compression", Value: ""},
		{Name: "parquet-library", Value: ""},
		{Name: "parquet-row-group-bytes", Value: ""},
		{Name: "parquet-row-group-records", Value: ""},
		{Name: "shards", Value: "8"},
	}
	odd := markerSettings{
		{Name: "compression", Value: "my%codec\nline\x00\xff"},
		{Name: "format", Value: "text"},
		{Name: "z-future-setting", Value: "= kept as is ="},
	}
	return map[string]markerSettings{"settings_v1.txt": jsonl, "settings_v1_escapes.txt": odd}
}

// TestSettingsMarkerGolden: the marker's bytes for given settings never
// change (a rerun after an upgrade compares them), and decode back to the
// same settings.
func TestSettingsMarkerGolden(t *testing.T) {
	for name, ms := range goldenMarkers() {
		t.Run(name, func(t *testing.T) {
			enc := encodeSettings(ms)
			want := golden.File(t, name, enc)
			got, err := decodeSettings(want)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, ms) {
				t.Fatalf("decoded %q, want %q", got, ms)
			}
		})
	}
}

// TestSettingsMarkerOfConfig: a Config's marker records every
// byte-affecting setting, names sorted and unique, defaults filled in; the
// settings that have no effect are "" so that changing them alone is no
// change; settings that do not affect bytes leave the marker as it is.
func TestSettingsMarkerOfConfig(t *testing.T) {
	markerOf := func(c Config) markerSettings {
		t.Helper()
		st, err := c.settings()
		if err != nil {
			t.Fatal(err)
		}
		return st.markerSettings()
	}
	base := Config{Bucket: "bucket-name", Prefix: "out", Files: Files{Format: "jsonl", Compression: "gzip"}}
	ms := markerOf(base)
	names := make([]string, len(ms))
	for i, s := range ms {
		names[i] = s.Name
		if settingLabels[s.Name] == "" {
			t.Errorf("setting %q has no label", s.Name)
		}
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("names not sorted and unique: %v", names)
	}
	if len(settingLabels) != len(ms) {
		t.Errorf("%d labels for %d settings", len(settingLabels), len(ms))
	}
	for name, want := range map[string]string{
		"compression": "gzip", "format": "jsonl", "shards": "4", "max-batch-bytes": "67108864",
		"max-file-bytes": "67108864", "checkpoint-sync-bytes": "1048576", "output-version": "2",
		"file-names": fileNames + ".jsonl.gz", "parquet-compression": "",
	} {
		if got, _ := ms.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if lib, _ := ms.Get("compression-library"); !strings.HasPrefix(lib, "github.com/klauspost/compress ") && lib != unknownLibrary {
		t.Errorf("compression-library = %q", lib)
	}
	if _, err := decodeSettings(encodeSettings(ms)); err != nil {
		t.Fatalf("a Config's marker does not decode: %v", err)
	}

	same := func(what string, c Config) {
		t.Helper()
		if ch := changes(ms, markerOf(c)); len(ch) > 0 {
			t.Errorf("%s changes the marker: %v", what, ch)
		}
	}
	differs := func(what string, c Config, setting string) {
		t.Helper()
		ch := changes(ms, markerOf(c))
		if len(ch) == 0 || !slices.ContainsFunc(ch, func(c SettingChange) bool { return c.Setting == setting }) {
			t.Errorf("%s: changes %v, want one of %s", what, ch, setting)
		}
	}
	c := base
	c.CheckpointBytes = 64 << 20 // sync points stay every 1 MiB
	c.CheckpointInterval = 5e9
	c.PartSize = 16 << 20
	c.Concurrency = 2
	c.FinalizeCommit = FinalizeNever
	c.Endpoint, c.Region, c.PathStyle = "http://127.0.0.1:9", "eu-west-1", true
	same("settings that leave the bytes alone", c)
	c = base
	c.MaxFileBytes = DefaultMaxBatchBytes
	same("the default MaxFileBytes spelled out", c)

	c = base
	c.Compression = "zstd"
	differs("Compression", c, "Compression")
	c = base
	c.Shards = 8
	differs("Shards", c, "Shards")
	c = base
	c.MaxFileRecords = 10
	differs("MaxFileRecords", c, "MaxFileRecords")
	c = base
	c.MaxBatchBytes = 1 << 20
	differs("MaxBatchBytes", c, "MaxBatchBytes")
	c = base
	c.CheckpointBytes = 64 << 10
	differs("CheckpointBytes below 1 MiB", c, settingLabels["checkpoint-sync-bytes"])

	// Without compression, sync points leave no trace in the bytes.
	plain := base
	plain.Compression = ""
	pfp := markerOf(plain)
	plain.CheckpointBytes = 4 << 10
	if ch := changes(pfp, markerOf(plain)); len(ch) > 0 {
		t.Errorf("CheckpointBytes of uncompressed files changes the marker: %v", ch)
	}

	pq := Config{Bucket: "bucket-name", Files: Files{Format: "parquet", Parquet: ParquetOptions{Compression: "zstd"}}}
	qfp := markerOf(pq)
	if v, _ := qfp.Get("parquet-compression"); v != "zstd" {
		t.Errorf("parquet-compression = %q", v)
	}
	if v, _ := qfp.Get("parquet-library"); !strings.Contains(v, "parquet-go") && !strings.Contains(v, unknownLibrary) {
		t.Errorf("parquet-library = %q", v)
	}
	pq.Parquet.RowGroupBytes = 1 << 20
	if ch := changes(qfp, markerOf(pq)); len(ch) != 1 || ch[0].Setting != "Parquet.RowGroupBytes" {
		t.Errorf("RowGroupBytes: changes %v", ch)
	}
}

// TestSettingsChanges: settings one marker records and the other does not
// (another build of s3once) cannot be judged and are no change; the error
// names the folder, each change and what to do, and carries its code.
func TestSettingsChanges(t *testing.T) {
	was := markerSettings{{Name: "compression", Value: "gzip"}, {Name: "future", Value: "x"}, {Name: "shards", Value: "4"}}
	now := markerSettings{{Name: "compression", Value: "zstd"}, {Name: "newer", Value: "y"}, {Name: "shards", Value: "4"}}
	ch := changes(was, now)
	if want := []SettingChange{{"Compression", "gzip", "zstd"}}; !reflect.DeepEqual(ch, want) {
		t.Fatalf("changes %v, want %v", ch, want)
	}
	err := error(&SettingsChangedError{Bucket: "b", Prefix: "out", Changes: append(ch, SettingChange{"Shards", "4", "8"}), Done: "nothing was committed"})
	msg := err.Error()
	for _, want := range []string{"s3://b/out/", "Compression gzip -> zstd, Shards 4 -> 8", "nothing was committed", "fresh Prefix"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if !errors.Is(err, ErrSettingsChanged) || !errcode.Has(errors.New(msg), errcode.SettingsChanged) {
		t.Errorf("the error is not ErrSettingsChanged by value and by text: %s", msg)
	}
}

// TestSettingsChangeLineIsShort: the line of a codec change (gzip to zstd,
// which also changes the compression canary digest and the file-name
// template) names the codec's change with both values and the digest and
// the template by name alone, on one line under 200 characters, from the
// preflight and from a run that refused the folder; the whole values stay
// in the error's Changes.
func TestSettingsChangeLineIsShort(t *testing.T) {
	markerOf := func(compression string) markerSettings {
		t.Helper()
		st, err := Config{Bucket: "demo", Prefix: "out", Files: Files{Format: "jsonl", Compression: compression}}.settings()
		if err != nil {
			t.Fatal(err)
		}
		return st.markerSettings()
	}
	was, now := markerOf("gzip"), markerOf("zstd")
	ch := changes(was, now)
	full := map[string]SettingChange{}
	for _, c := range ch {
		full[c.Setting] = c
	}
	digest, names := full[settingLabels["compression-canary"]], full[settingLabels["file-names"]]
	if full["Compression"] != (SettingChange{"Compression", "gzip", "zstd"}) || !strings.HasPrefix(digest.Was, "sha256:") || !strings.HasSuffix(names.Now, ".jsonl.zst") {
		t.Fatalf("the changes of a codec change do not hold the whole values: %v", ch)
	}
	for _, done := range []string{"", settingsRefusedDone} {
		msg := (&SettingsChangedError{Bucket: "demo", Prefix: "out", Changes: ch, Done: done}).Error()
		t.Logf("%d characters: %s", len(msg), msg)
		if len(msg) > 200 || strings.Contains(msg, "\n") {
			t.Errorf("the line of a codec change is %d characters, want one line of at most 200: %s", len(msg), msg)
		}
		for _, want := range []string{"s3://demo/out/", "Compression gzip -> zstd", digest.Setting, names.Setting, "fresh Prefix", errcode.SettingsChanged.Token()} {
			if !strings.Contains(msg, want) {
				t.Errorf("the line does not say %q: %s", want, msg)
			}
		}
		for _, value := range []string{digest.Was, digest.Now, names.Was, names.Now} {
			if strings.Contains(msg, value) {
				t.Errorf("the line shows the value %q: %s", value, msg)
			}
		}
	}
	// A setting this build does not know, with a long value, is named
	// alone too; a short one is shown.
	msg := (&SettingsChangedError{Bucket: "b", Prefix: "p", Changes: []SettingChange{
		{"future-template", strings.Repeat("x", 40), strings.Repeat("y", 40)}, {"future-count", "1", "2"}}}).Error()
	if strings.Contains(msg, "xxxx") || !strings.Contains(msg, "future-count 1 -> 2 (and future-template)") {
		t.Errorf("a later build's settings: %s", msg)
	}
}

// TestDecodeSettingsRefuses: the decoder takes canonical markers of its
// version only, and says why it refuses.
func TestDecodeSettingsRefuses(t *testing.T) {
	for _, tc := range []struct{ in, why string }{
		{"", "does not start"},
		{"s3once-settings 1", "does not start"},
		{"s3once-settings 2\ncompression=gzip\n", "version 2, written by a later s3once"},
		{"s3once-settings 01\n", "version \"01\""},
		{"s3once-settings 0\n", "version \"0\""},
		{"s3once-settings 1\ncompression=gzip", "no end"},
		{"s3once-settings 1\nshards=4\ncompression=gzip\n", "out of order"},
		{"s3once-settings 1\nshards=4\nshards=4\n", "out of order"},
		{"s3once-settings 1\nShards=4\n", "not name=value"},
		{"s3once-settings 1\n=4\n", "not name=value"},
		{"s3once-settings 1\nshards\n", "not name=value"},
		{"s3once-settings 1\nformat=%41\n", "written as is"},
		{"s3once-settings 1\nformat=%0a\n", "escape"},
		{"s3once-settings 1\nformat=%0\n", "cut escape"},
		{"s3once-settings 1\nformat=a\tb\n", "raw byte"},
		{"s3once-settings 1\n" + strings.Repeat("a", maxSettingsBytes) + "\n", "at most"},
	} {
		_, err := decodeSettings([]byte(tc.in))
		if err == nil || !errors.Is(err, errSettingsMarker) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("decode %q: %v, want %q", tc.in, err, tc.why)
		}
	}
	ms, err := decodeSettings([]byte("s3once-settings 1\n"))
	if err != nil || len(ms) != 0 {
		t.Errorf("an empty marker: %v, %v", ms, err)
	}
}

// FuzzDecodeSettings: the decoder never panics, and what it takes encodes
// back to the same bytes (one encoding per settings).
func FuzzDecodeSettings(f *testing.F) {
	for name := range goldenMarkers() {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("s3once-settings 1\nformat=%25%0A\n"))
	f.Add([]byte("s3once-settings 2\n"))
	f.Add([]byte("s3once-settings 1\na=\nb=%FF\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := decodeSettings(b)
		if err != nil {
			return
		}
		if enc := encodeSettings(ms); !bytes.Equal(enc, b) {
			t.Fatalf("%q decodes to %q, which encodes to %q", b, ms, enc)
		}
	})
}
