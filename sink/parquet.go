package sink

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/format"
	"github.com/s3once/s3once/internal/filebody"
	"github.com/s3once/s3once/internal/parquetbody"
)

func init() {
	format.Register("parquet", parquetFormat{})
}

// Defaults and bounds of ParquetOptions.
const (
	// DefaultRowGroupBytes is ParquetOptions.RowGroupBytes when zero.
	DefaultRowGroupBytes = 64 << 20
	// MinRowGroupBytes and MaxRowGroupBytes bound ParquetOptions.RowGroupBytes.
	MinRowGroupBytes = 1 << 10
	MaxRowGroupBytes = MaxMaxBatchBytes
)

// ParquetOptions are the settings of Format "parquet" (Config.Parquet). Zero
// values mean the defaults. Every one of them changes a file's bytes.
type ParquetOptions struct {
	// Compression is the codec of every column's pages: "snappy" (the
	// default), "zstd", "gzip" or "none". A column's own tag (such as
	// `parquet:"name,zstd"`) overrides it. Config.Compression does not apply
	// to Parquet files and must stay empty or "none".
	Compression string
	// RowGroupBytes ends a row group once its records (their row encoding,
	// as MaxFileBytes counts them) reach this many bytes. Default
	// DefaultRowGroupBytes (64 MiB), at least 1 KiB, at most 2 GiB. A writer
	// holds one open row group per file in memory, compressed.
	RowGroupBytes int64
	// RowGroupRecords, when positive, also ends a row group once it holds
	// this many records.
	RowGroupRecords int64
}

func (o ParquetOptions) isZero() bool { return o == ParquetOptions{} }

// parquetSettings is ParquetOptions with defaults filled in, as it travels
// to workers, plus the element type the pipeline was built with.
type parquetSettings struct {
	Compression     string            `json:"compression"`
	RowGroupBytes   int64             `json:"rowGroupBytes"`
	RowGroupRecords int64             `json:"rowGroupRecords,omitempty"`
	Row             *beam.EncodedType `json:"row,omitempty"`
}

// applyParquet checks opts against s's format and compression, and fills
// s.Parquet when the format is Parquet. It returns the problems found.
func (s *settings) applyParquet(opts ParquetOptions) []string {
	f, err := format.Lookup(s.Format)
	if err != nil {
		return nil // reported with the format
	}
	if _, ok := f.(parquetFormat); !ok {
		if !opts.isZero() {
			return []string{fmt.Sprintf("Parquet settings apply to Parquet files only, and Format is %q", s.Format)}
		}
		return nil
	}
	var problems []string
	if s.Compression != "" && s.Compression != "none" {
		problems = append(problems, fmt.Sprintf("Compression %q does not apply to Format %q: a Parquet file compresses each column's pages itself; leave Compression empty and set Parquet.Compression (\"snappy\", the default, \"zstd\", \"gzip\" or \"none\")", s.Compression, s.Format))
	}
	p := parquetSettings{Compression: opts.Compression, RowGroupBytes: opts.RowGroupBytes, RowGroupRecords: opts.RowGroupRecords}
	if p.Compression == "" {
		p.Compression = "snappy"
	}
	if !parquetbody.KnownCompression(p.Compression) {
		problems = append(problems, fmt.Sprintf("Parquet.Compression %q must be \"snappy\", \"zstd\", \"gzip\" or \"none\" (empty means \"snappy\")", opts.Compression))
	}
	if p.RowGroupBytes == 0 {
		p.RowGroupBytes = DefaultRowGroupBytes
	}
	if p.RowGroupBytes < MinRowGroupBytes || p.RowGroupBytes > MaxRowGroupBytes {
		problems = append(problems, fmt.Sprintf("Parquet.RowGroupBytes %d must be in [%d, %d] (0 means %d)", p.RowGroupBytes, MinRowGroupBytes, int64(MaxRowGroupBytes), DefaultRowGroupBytes))
	}
	if p.RowGroupRecords < 0 {
		problems = append(problems, fmt.Sprintf("Parquet.RowGroupRecords %d must not be negative (0 means no limit)", p.RowGroupRecords))
	}
	s.Parquet = &p
	return problems
}

// bindParquetRow records the input's element type for the writer, which
// decodes rows into it; it does nothing for other formats.
func (s *settings) bindParquetRow(t reflect.Type) {
	if s.Parquet != nil {
		p := *s.Parquet
		p.Row = &beam.EncodedType{T: t}
		s.Parquet = &p
	}
}

// parquetRowType is the type the writer decodes records into and derives
// the file's schema from: the element type in output version 1, its list
// type (parquetbody.ListType) from version 2 on. It checks that type's
// schema.
func (s writerSettings) parquetRowType() (reflect.Type, error) {
	if s.Parquet == nil || s.Parquet.Row == nil || s.Parquet.Row.T == nil {
		return nil, errors.New("the pipeline was built without the Parquet element type")
	}
	t := s.Parquet.Row.T
	if s.OutputVersion >= 2 {
		lt, err := parquetbody.ListType(t)
		if err != nil {
			return nil, err
		}
		t = lt
	}
	if _, err := parquetbody.Schema(t); err != nil {
		return nil, err
	}
	return t, nil
}

// bodyKind makes the bodies of s's files, whose format is f and codec c:
// Parquet's, or a line format's (its header, then the records, compressed
// by c).
func (s writerSettings) bodyKind(f format.Format, c format.Codec) (filebody.Kind, error) {
	if s.Parquet == nil {
		var header []byte
		if h, ok := f.(format.FileHeader); ok {
			header = h.FileHeader()
		}
		return filebody.Lines(c, header), nil
	}
	row, err := s.parquetRowType()
	if err != nil {
		return nil, err
	}
	return parquetbody.New(parquetbody.Options{Row: row, Compression: s.Parquet.Compression,
		RowGroupBytes: s.Parquet.RowGroupBytes, RowGroupRecords: s.Parquet.RowGroupRecords, Version: s.OutputVersion,
		Replayed: func(ctx context.Context, records int64) {
			metricParquetReplays.Inc(ctx, 1)
			metricParquetReplayedRecord.Inc(ctx, records)
		}})
}

// Counters of Parquet resumes that re-encoded the file's records, and of
// those records.
var (
	metricParquetReplays        = beam.NewCounter("s3once", "parquet_replays")
	metricParquetReplayedRecord = beam.NewCounter("s3once", "parquet_records_replayed")
)

// parquetFormat writes Go structs as Apache Parquet files, with
// github.com/parquet-go/parquet-go; see the package documentation's
// "Parquet" section for the schema, the row encoding and what makes the
// bytes. Its settings are in Config.Parquet; it is registered as "parquet".
type parquetFormat struct{}

// CheckType accepts struct types whose fields all have a deterministic
// Parquet form, and names the first field that has none.
func (parquetFormat) CheckType(t reflect.Type) error {
	_, err := parquetbody.RowCodec(t)
	return err
}

// Append appends the row encoding of elem, a struct.
func (parquetFormat) Append(dst []byte, elem any) ([]byte, error) {
	v := reflect.ValueOf(elem)
	if !v.IsValid() {
		return dst, errors.New("format \"parquet\": nil element")
	}
	c, err := parquetbody.RowCodec(v.Type())
	if err != nil {
		return dst, err
	}
	start := len(dst)
	if dst, err = c.Append(dst, v); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

func (parquetFormat) Extension() string   { return ".parquet" }
func (parquetFormat) ContentType() string { return "application/vnd.apache.parquet" }
