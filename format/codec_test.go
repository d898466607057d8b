package format

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// zstdOf compresses p as one member of z.
func zstdOf(t *testing.T, z Zstd, p []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := z.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestZstdLevels: Zstd's Level is a zstd level, like Gzip's a gzip level:
// zero and 3 write the library's default bytes, the levels of one of the
// library's encoders the same bytes, the best of them no more than the
// default, every one decodes back, and a level outside 1 to 22 is refused.
func TestZstdLevels(t *testing.T) {
	var p []byte
	for i := range 20000 {
		p = fmt.Appendf(p, `{"id":%d,"user":"u%d","text":"the quick brown fox"}`+"\n", i, i*7919%5000)
	}
	def := zstdOf(t, Zstd{}, p)
	if three := zstdOf(t, Zstd{Level: 3}, p); !bytes.Equal(three, def) {
		t.Errorf("level 3 wrote %d bytes, the default %d: want the same bytes", len(three), len(def))
	}
	fast, better, best := zstdOf(t, Zstd{Level: 1}, p), zstdOf(t, Zstd{Level: 6}, p), zstdOf(t, Zstd{Level: 22}, p)
	for _, band := range []struct {
		lo, hi int
		want   []byte
	}{{1, 2, fast}, {3, 5, def}, {6, 9, better}, {10, 22, best}} {
		for _, level := range []int{band.lo, band.hi} {
			if got := zstdOf(t, Zstd{Level: level}, p); !bytes.Equal(got, band.want) {
				t.Errorf("level %d wrote other bytes than level %d", level, band.lo)
			}
		}
	}
	if len(best) > len(def) {
		t.Errorf("level 22 wrote %d bytes, the default %d", len(best), len(def))
	}
	for _, enc := range [][]byte{fast, def, better, best} {
		r, err := zstd.NewReader(bytes.NewReader(enc))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, p) {
			t.Fatalf("a member of %d bytes reads back %d bytes (%v), want %d", len(enc), len(got), err, len(p))
		}
	}
	for _, level := range []int{-1, 23} {
		if _, err := (Zstd{Level: level}).NewWriter(io.Discard); err == nil {
			t.Errorf("level %d accepted", level)
		}
	}
}
