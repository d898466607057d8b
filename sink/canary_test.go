package sink

import (
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"github.com/s3once/s3once/format"
	"github.com/s3once/s3once/internal/filebody"
	"github.com/s3once/s3once/internal/parquetbody"
)

// stdGzip is gzip written by the standard library instead of
// klauspost/compress: another library, other bytes.
type stdGzip struct{}

func (stdGzip) NewWriter(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriter(w), nil }
func (stdGzip) Extension() string                             { return ".gz" }
func (stdGzip) ContentType() string                           { return "application/gzip" }

func init() { format.RegisterCodec("test-std-gzip", stdGzip{}) }

// TestCanaryDigests: the canary digests are stable within a build, tell
// codecs and Parquet compressions apart, tell two libraries of one format
// apart (klauspost's gzip and the standard library's), and a rerun whose
// library writes other bytes is a changed setting while one that only
// reports another module version is not.
func TestCanaryDigests(t *testing.T) {
	seen := map[string]string{}
	for _, name := range []string{"gzip", "zstd", "none", "test-std-gzip"} {
		d := codecCanary(name)
		if !strings.HasPrefix(d, "sha256:") {
			t.Fatalf("codec %s: digest %q", name, d)
		}
		c, err := format.LookupCodec(name)
		if err != nil {
			t.Fatal(err)
		}
		if d2, err := filebody.Canary(c); err != nil || d2 != d {
			t.Errorf("codec %s: a second run gives %q, %v; want %q", name, d2, err, d)
		}
		if other, ok := seen[d]; ok {
			t.Errorf("codecs %s and %s record the same digest %s", other, name, d)
		}
		seen[d] = name
	}
	for _, comp := range []string{"snappy", "zstd", "gzip", "none"} {
		d := parquetCanary(comp)
		if !strings.HasPrefix(d, "sha256:") {
			t.Fatalf("parquet %s: digest %q", comp, d)
		}
		if d2, err := parquetbody.Canary(comp); err != nil || d2 != d {
			t.Errorf("parquet %s: a second run gives %q, %v; want %q", comp, d2, err, d)
		}
		if other, ok := seen[d]; ok {
			t.Errorf("%s and parquet %s record the same digest %s", other, comp, d)
		}
		seen[d] = "parquet " + comp
	}

	mk := func(canary, lib string) markerSettings {
		return markerSettings{{Name: "compression", Value: "gzip"}, {Name: "compression-canary", Value: canary}, {Name: "compression-library", Value: lib}}
	}
	if ch := changes(mk(codecCanary("gzip"), unknownLibrary), mk(codecCanary("gzip"), "github.com/klauspost/compress v1.19.2")); len(ch) != 0 {
		t.Errorf("another module version with the same output is a change: %v", ch)
	}
	ch := changes(mk(codecCanary("gzip"), "x"), mk(codecCanary("test-std-gzip"), "x"))
	if len(ch) != 1 || !strings.Contains(ch[0].Setting, "canary") {
		t.Errorf("another library's output: changes %v", ch)
	}
}

// TestCanaryDigestsPinned pins the digests this build's libraries record:
// a digest that changes refuses every rerun into a folder written before
// (ErrSettingsChanged), so it changes only with a library that writes
// other bytes, on purpose, as the golden files do. The canary inputs, the
// Parquet row's type name among them (it names the file's schema), are
// part of the digests.
func TestCanaryDigestsPinned(t *testing.T) {
	for key, want := range map[string]string{
		"codec:none":     "sha256:061710fe169dcf195bc77cf3083e664d",
		"codec:gzip":     "sha256:f86f7ba5d2fae44527b00fbf9bf8398a",
		"codec:zstd":     "sha256:ece0c84158c13b065cffa395e9acf6ef",
		"parquet:snappy": "sha256:d0b976182904c22187bf6e080ae7d6be",
		"parquet:zstd":   "sha256:46fde9a520f582235f31e96215e7d8a9",
		"parquet:gzip":   "sha256:b2d17619432ed811340796fa3d520a22",
		"parquet:none":   "sha256:80e5c5f6434b5f0d9f7d2a0c930cb5b9",
	} {
		kind, name, _ := strings.Cut(key, ":")
		got := parquetCanary(name)
		if kind == "codec" {
			got = codecCanary(name)
		}
		if got != want {
			t.Errorf("%s: digest %s, want %s (a library that writes other bytes, or a changed canary input)", key, got, want)
		}
	}
}
