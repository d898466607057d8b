package parquetbody

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/s3once/s3once/internal/filebody"
)

// Concat writes the row groups of files, in order, into one Parquet file
// on w: a writer of the first file's own schema (so field ids, types and
// repetition are kept) copies each row group, which parquet-go splices in
// as compressed column chunks where it can, without decoding records. The
// first file's key-value metadata is kept; created_by is output version
// 2's. Every file must have the first one's schema. The footer's
// byte-array statistics are bounded as output version 2 bounds them
// (boundFooterStats). It returns the number of rows written.
func Concat(w io.Writer, files []*parquet.File) (rows int64, err error) {
	if len(files) == 0 {
		return 0, errors.New("parquet: nothing to concatenate")
	}
	schema := files[0].Schema()
	out := &output{w: w}
	opts := []parquet.WriterOption{
		schema,
		&parquet.WriterConfig{CreatedBy: createdBy[2]},
		parquet.WriteBufferSize(0),
	}
	if c := chunkCodec(files[0].Metadata()); c != nil {
		opts = append(opts, parquet.Compression(c))
	}
	for _, kv := range files[0].Metadata().KeyValueMetadata {
		opts = append(opts, parquet.KeyValueMetadata(kv.Key, kv.Value))
	}
	for _, path := range byteArrayColumns(schema) {
		opts = append(opts, parquet.SkipPageStatistics(path...))
	}
	pw := parquet.NewWriter(out, opts...)
	for i, f := range files {
		if !parquet.EqualNodes(schema, f.Schema()) {
			return rows, fmt.Errorf("parquet: input %d has another schema than the first", i)
		}
		for _, rg := range f.RowGroups() {
			n, err := pw.WriteRowGroup(rg)
			if err != nil {
				return rows, fmt.Errorf("parquet: copy a row group of input %d: %w", i, err)
			}
			rows += n
		}
	}
	if err := pw.Flush(); err != nil {
		return rows, fmt.Errorf("parquet: end row group: %w", err)
	}
	out.hold = &bytes.Buffer{}
	err = pw.Close()
	tail := out.hold.Bytes()
	out.hold = nil
	if err != nil {
		return rows, fmt.Errorf("parquet: write footer: %w", err)
	}
	if tail, _, err = boundFooterStats(tail, StatBytes); err != nil {
		return rows, fmt.Errorf("parquet: the footer's statistics: %w", err)
	}
	if _, err := out.Write(tail); err != nil {
		return rows, fmt.Errorf("parquet: write footer: %w", err)
	}
	return rows, nil
}

// chunkCodec is the page codec of the file's first column chunk, if it is
// one of codecs.
func chunkCodec(md *format.FileMetaData) compress.Codec {
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			for _, c := range codecs {
				if c.CompressionCodec() == cc.MetaData.Codec {
					return c
				}
			}
			return nil
		}
	}
	return nil
}

// FileSummary is what an open Parquet file's footer records, as the
// sink's writer keeps it of a file it has just written (filebody.Summary):
// where each row group starts, and each column's sizes, counts and bounds.
func FileSummary(f *parquet.File) filebody.Summary {
	return summarize(f.Metadata(), f.Schema())
}
