package parquetbody

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/s3once/s3once/internal/filebody"
)

// parquetCanaryRow is the canary Parquet file's row: a column of each kind
// the sink writes. Its name is the file schema's name, and so in the
// digest: it keeps the name it had in package sink.
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

// canaryRows is the canary file's size, in rows.
const canaryRows = 500

// Canary is the canary digest (filebody.Digest) of the Parquet file this
// package writes, with the page compression named, for fixed rows of every
// kind of column: two builds of parquet-go (and of the page codecs) that
// write other bytes have other digests.
func Canary(compression string) (string, error) {
	t := reflect.TypeFor[parquetCanaryRow]()
	kind, err := New(Options{Row: t, Compression: compression, RowGroupBytes: 8 << 10, Version: 1})
	if err != nil {
		return "", err
	}
	codec, err := RowCodec(t)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	f, err := kind.Open(&out, func(what string, err error) error { return fmt.Errorf("%s: %w", what, err) })
	if err != nil {
		return "", err
	}
	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	note := "a note"
	var rec []byte
	x := uint64(0x2545f4914f6cdd1d)
	for i := range canaryRows {
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
		if rec, err = codec.Append(rec[:0], reflect.ValueOf(row)); err != nil {
			return "", err
		}
		if err := f.Write(rec); err != nil {
			return "", err
		}
	}
	if err := f.Finish(); err != nil {
		return "", err
	}
	return filebody.Digest(out.Bytes()), nil
}
