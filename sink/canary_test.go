package sink

import (
	"compress/gzip"
	"io"
	"strings"
	"testing"
)

// stdGzip is gzip written by the standard library instead of
// klauspost/compress: another library, other bytes.
type stdGzip struct{}

func (stdGzip) NewWriter(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriter(w), nil }
func (stdGzip) Extension() string                             { return ".gz" }
func (stdGzip) ContentType() string                           { return "application/gzip" }

func init() { RegisterCodec("test-std-gzip", stdGzip{}) }

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
		if d2, err := runCodecCanary(name); err != nil || d2 != d {
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
		if d2, err := runParquetCanary(comp); err != nil || d2 != d {
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
