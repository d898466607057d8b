package sink

// Canary digests: what the libraries that encode the files write, recorded
// in the settings marker by what they write rather than by their module
// versions. A digest is the SHA-256 of the library's output on a fixed
// canary input, encoded the way the writer encodes files: the codec's
// members on a canary corpus, a canary Parquet file through the sink's own
// Parquet path. A test binary (which carries no module versions) and a
// production binary of the same libraries record the same digests; two
// library versions that write other bytes record other digests, and a rerun
// with them is refused as changed settings before any commit. Module
// versions stay in the marker for an operator to read, never compared.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/s3once/s3once/internal/parquetbody"
)

// canaryLines is the size of the canary corpus, in lines (about 70 KiB).
const canaryLines = 1000

// canaryCorpus is text-like lines with repeats and noise, so that a
// compressor's matching and entropy coding both show in its output.
var canaryCorpus = sync.OnceValue(func() []byte {
	var b []byte
	x := uint64(0x9e3779b97f4a7c15)
	for i := range canaryLines {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"user":"u`...)
		b = strconv.AppendUint(b, x%5000, 10)
		b = append(b, `","value":`...)
		b = strconv.AppendUint(b, x>>20, 16)
		b = append(b, `,"text":"the quick brown fox jumps over the lazy dog"}`...)
		b = append(b, '\n')
	}
	return b
})

var canaries sync.Map // "codec:<name>" or "parquet:<compression>" -> digest

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// codecCanary is the digest of what the codec registered under name writes
// for the canary corpus, as two members (the second through a reset
// writer where the codec reuses one, as the writer does).
func codecCanary(name string) string {
	if d, ok := canaries.Load("codec:" + name); ok {
		return d.(string)
	}
	d, err := runCodecCanary(name)
	if err != nil {
		d = "error: " + err.Error()
	}
	canaries.Store("codec:"+name, d)
	return d
}

func runCodecCanary(name string) (string, error) {
	c, err := lookupCodec(name)
	if err != nil {
		return "", err
	}
	corpus := canaryCorpus()
	half := len(corpus) / 2
	var out sinkBuffer
	w, err := c.NewWriter(&out)
	if err != nil {
		return "", err
	}
	for i, part := range [][]byte{corpus[:half], corpus[half:]} {
		if i > 0 {
			if r, ok := w.(interface{ Reset(io.Writer) }); ok {
				r.Reset(&out)
			} else if w, err = c.NewWriter(&out); err != nil {
				return "", err
			}
		}
		if _, err := w.Write(part); err != nil {
			return "", err
		}
		if err := w.Close(); err != nil {
			return "", err
		}
	}
	return digest(out), nil
}

// sinkBuffer collects bytes.
type sinkBuffer []byte

func (b *sinkBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

// parquetCanaryRow is the canary Parquet file's row: a column of each kind
// the sink writes.
type parquetCanaryRow struct {
	ID    int64
	User  string
	Score float64
	At    time.Time
	Tags  []string
	Note  *string
	Blob  []byte
	Flag  bool
	Small int32
}

// parquetCanaryRows is the canary file's size, in rows.
const parquetCanaryRows = 500

// parquetCanary is the digest of the canary Parquet file the sink's
// Parquet path writes with the page compression named.
func parquetCanary(compression string) string {
	if d, ok := canaries.Load("parquet:" + compression); ok {
		return d.(string)
	}
	d, err := runParquetCanary(compression)
	if err != nil {
		d = "error: " + err.Error()
	}
	canaries.Store("parquet:"+compression, d)
	return d
}

func runParquetCanary(compression string) (string, error) {
	kind, err := parquetbody.New(parquetbody.Options{Row: reflect.TypeFor[parquetCanaryRow](), Compression: compression, RowGroupBytes: 8 << 10, Version: 1})
	if err != nil {
		return "", err
	}
	var out sinkBuffer
	f, err := kind.Open(&out, func(what string, err error) error { return fmt.Errorf("%s: %w", what, err) })
	if err != nil {
		return "", err
	}
	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	note := "a note"
	var rec []byte
	x := uint64(0x2545f4914f6cdd1d)
	for i := range parquetCanaryRows {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		row := parquetCanaryRow{
			ID: int64(i), User: "u" + strconv.FormatUint(x%300, 10), Score: float64(x%10000) / 7,
			At: base.Add(time.Duration(x % uint64(time.Hour))), Tags: []string{"a", strconv.Itoa(i % 7)},
			Blob: []byte{byte(x), byte(x >> 8)}, Flag: x&1 == 1, Small: int32(x % 1000),
		}
		if i%3 == 0 {
			row.Note = &note
		}
		if rec, err = (Parquet{}).Append(rec[:0], row); err != nil {
			return "", err
		}
		if err := f.Write(rec); err != nil {
			return "", err
		}
	}
	if err := f.Finish(); err != nil {
		return "", err
	}
	return digest(out), nil
}
