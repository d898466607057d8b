// Package parquetbody is the body of a Parquet file (a filebody.Kind):
// records, in their row encoding (internal/parquetrow), decoded into the
// row type and written with github.com/parquet-go/parquet-go, row groups
// ended by the records alone, and the footer rewritten so that its
// statistics stay short (output version 2, stats.go). It also holds what
// the sink asks of Parquet while the pipeline is built: a type's row codec
// and schema, and the type output version 2 writes (ListType).
//
// Bytes reach the output only when a row group ends, and the footer at the
// file's end, so a checkpoint persists the row groups ended so far, as any
// file's bytes. What the encoder needs to go on (the metadata of those row
// groups and the records of the open one) is rebuilt on a resume, not
// stored: a resume in the instance that checkpointed takes the encoder it
// suspended back, and any other encodes the file's records again and
// checks their bytes against the token's.
package parquetbody

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/minio/crc64nvme"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/s3once/s3once/internal/filebody"
	"github.com/s3once/s3once/internal/parquetrow"
)

// createdBy is the created_by string of every file's footer, by output
// version. It is fixed here, not taken from the library's build
// information, so that a file's bytes do not depend on how the program was
// built. Change it with the library's version: a new version may encode
// other bytes anyway.
var createdBy = map[int]string{
	1: "s3once version 1 (build parquet-go v0.32.0)",
	2: "s3once version 2 (build parquet-go v0.32.0)",
}

// CreatedBy is the created_by string of the files of an output version.
func CreatedBy(version int) string { return createdBy[version] }

// codecs are the page codecs Options.Compression names.
var codecs = map[string]compress.Codec{
	"snappy": &parquet.Snappy,
	"zstd":   &parquet.Zstd,
	"gzip":   &parquet.Gzip,
	"none":   &parquet.Uncompressed,
}

// KnownCompression reports whether name is a page codec: "snappy", "zstd",
// "gzip" or "none".
func KnownCompression(name string) bool {
	_, ok := codecs[name]
	return ok
}

var rowCodecs sync.Map // reflect.Type -> *parquetrow.Codec

// RowCodec returns the row codec of t, checking t's Parquet schema the
// first time.
func RowCodec(t reflect.Type) (*parquetrow.Codec, error) {
	if c, ok := rowCodecs.Load(t); ok {
		return c.(*parquetrow.Codec), nil
	}
	c, err := parquetrow.New(t)
	if err != nil {
		return nil, err
	}
	if _, err := Schema(t); err != nil {
		return nil, err
	}
	rowCodecs.Store(t, c)
	return c, nil
}

// Schema is parquet-go's schema of t. parquet-go panics on a type or a tag
// it cannot map; that is an error here.
func Schema(t reflect.Type) (schema *parquet.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			schema, err = nil, fmt.Errorf("format \"parquet\": type %v has no Parquet schema: %v", t, r)
		}
	}()
	return parquet.SchemaOf(reflect.New(t).Interface()), nil
}

// Options are the settings of the Parquet files of one writer instance.
type Options struct {
	// Row is the type records decode into, whose schema the files have:
	// the element type in output version 1, its ListType from version 2
	// on.
	Row reflect.Type
	// Compression is the pages' codec (KnownCompression).
	Compression string
	// RowGroupBytes ends a row group once its records' row encodings reach
	// it; RowGroupRecords, when positive, once it holds that many records.
	RowGroupBytes   int64
	RowGroupRecords int64
	// Version is the output version, 1 or 2; version 2 bounds the
	// statistics of byte-array columns (stats.go).
	Version int
	// Replayed, when not nil, is called each time a resume encodes the
	// records of a file again, with how many.
	Replayed func(ctx context.Context, records int64)
}

// errReplay is wrapped by the error of a recovery whose re-encoded records
// do not give the bytes the token describes: the library or its settings
// changed since the checkpoint. The writer then writes the file again from
// its first record.
var errReplay error = filebody.Stale("re-encoding the records of an open Parquet file does not give the bytes its token describes")

// maxSuspended bounds the Parquet files a writer instance keeps encoders
// for between a self-checkpoint and its resume.
const maxSuspended = 2

// Writers is a writer DoFn instance's Parquet state: how to encode, and the
// encoders of files it checkpointed, by upload, so that a resume in the
// same instance goes on without re-encoding the file's records. It is the
// filebody.Kind of Parquet files.
type Writers struct {
	o      Options
	codec  *parquetrow.Codec
	schema *parquet.Schema
	pages  parquet.WriterOption
	stats  []parquet.WriterOption // version 2's (stats.go)

	mu        sync.Mutex
	suspended []*file // oldest first
}

// New readies the Parquet state of a writer instance.
func New(o Options) (*Writers, error) {
	if o.Row == nil {
		return nil, errors.New("the pipeline was built without the Parquet element type")
	}
	codec, err := RowCodec(o.Row)
	if err != nil {
		return nil, err
	}
	schema, err := Schema(o.Row)
	if err != nil {
		return nil, err
	}
	pages, ok := codecs[o.Compression]
	if !ok {
		return nil, fmt.Errorf("unknown Parquet compression %q", o.Compression)
	}
	if _, ok := createdBy[o.Version]; !ok {
		return nil, fmt.Errorf("output version %d is not 1 or 2", o.Version)
	}
	p := &Writers{o: o, codec: codec, schema: schema, pages: parquet.Compression(pages)}
	if o.Version >= 2 {
		for _, path := range byteArrayColumns(schema) {
			p.stats = append(p.stats, parquet.SkipPageStatistics(path...))
		}
	}
	return p, nil
}

// file encodes one file's records as Parquet. Row groups end by the records
// alone; bytes reach the output only when a row group ends, and at the end
// of the file.
type file struct {
	pw    *parquet.Writer
	out   *output
	codec *parquetrow.Codec
	val   reflect.Value // decoded into, record after record

	o       Options
	records int64 // records in the file
	rgBytes int64 // record bytes in the open row group
	rgRows  int64 // records in the open row group

	upload string // the upload, while suspended

	schema  *parquet.Schema
	summary filebody.Summary // what the footer records, once finished
}

// output counts and checksums what the encoder writes, and passes it on to
// w; a nil w drops it (a replay).
type output struct {
	w   io.Writer
	n   int64
	crc uint64
	// hold, when not nil, takes what is written instead (the end of a
	// file of output version 2, whose footer is rewritten before it goes
	// on).
	hold *bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	if o.hold != nil {
		return o.hold.Write(p)
	}
	o.n += int64(len(p))
	o.crc = crc64nvme.Update(o.crc, p)
	if o.w == nil {
		return len(p), nil
	}
	return o.w.Write(p)
}

// start begins a file that writes to w (nil: nowhere).
func (p *Writers) start(w io.Writer) *file {
	out := &output{w: w}
	opts := []parquet.WriterOption{
		p.schema,
		p.pages,
		&parquet.WriterConfig{CreatedBy: createdBy[p.o.Version]},
		// Unbuffered: a row group is in the output as soon as it ends, so a
		// checkpoint persists exactly the row groups ended so far.
		parquet.WriteBufferSize(0),
	}
	opts = append(opts, p.stats...)
	return &file{
		pw:     parquet.NewWriter(out, opts...),
		out:    out,
		codec:  p.codec,
		val:    reflect.New(p.codec.Type()).Elem(),
		o:      p.o,
		schema: p.schema,
	}
}

// write adds a record (its row encoding) to the file.
func (f *file) write(rec []byte) error {
	if err := f.codec.Decode(rec, f.val); err != nil {
		return err
	}
	if err := f.pw.Write(f.val.Addr().Interface()); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	f.records++
	f.rgRows++
	f.rgBytes += int64(len(rec))
	if f.rgBytes >= f.o.RowGroupBytes || (f.o.RowGroupRecords > 0 && f.rgRows >= f.o.RowGroupRecords) {
		if err := f.pw.Flush(); err != nil {
			return fmt.Errorf("parquet: end row group: %w", err)
		}
		f.rgBytes, f.rgRows = 0, 0
	}
	return nil
}

// finish ends the open row group and writes the footer, and keeps what
// the footer records (summarize). In output version 2 the footer's
// byte-array statistics are bounded first (boundFooterStats).
func (f *file) finish() error {
	f.out.hold = &bytes.Buffer{}
	err := f.pw.Close()
	tail := f.out.hold.Bytes()
	f.out.hold = nil
	if err != nil {
		return fmt.Errorf("parquet: write footer: %w", err)
	}
	var md *format.FileMetaData
	if f.o.Version < 2 {
		_, md, err = readFooter(tail)
	} else {
		tail, md, err = boundFooterStats(tail, StatBytes)
	}
	if err != nil {
		return fmt.Errorf("parquet: the footer's statistics: %w", err)
	}
	if _, err := f.out.Write(tail); err != nil {
		return fmt.Errorf("parquet: write footer: %w", err)
	}
	f.summary = summarize(md, f.schema)
	return nil
}

// suspend keeps f, the encoder of a file just checkpointed under upload,
// for a resume in this instance. The oldest suspended file goes when there
// are more than maxSuspended: a resume elsewhere, or never, must not pin
// memory.
func (p *Writers) suspend(upload string, f *file) {
	f.out.w = nil
	f.upload = upload
	p.mu.Lock()
	defer p.mu.Unlock()
	p.suspended = append(p.suspended, f)
	if n := len(p.suspended) - maxSuspended; n > 0 {
		clear(p.suspended[:n])
		p.suspended = p.suspended[n:]
	}
}

// take removes and returns the suspended encoder of upload, or nil.
func (p *Writers) take(upload string) *file {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.suspended {
		if f.upload == upload {
			p.suspended = append(p.suspended[:i], p.suspended[i+1:]...)
			return f
		}
	}
	return nil
}

// body is the body of one Parquet file: its encoder, and the instance's
// Parquet state it came from.
type body struct {
	p    *Writers
	f    *file
	fail filebody.Fail
}

// Open begins a file that writes to w.
func (p *Writers) Open(w io.Writer, fail filebody.Fail) (filebody.Body, error) {
	return &body{p: p, f: p.start(w), fail: fail}, nil
}

// Resume readies the encoder of the file at names. The encoder this
// instance suspended at that checkpoint goes on when it stands exactly
// where the token does (records, bytes and CRC64NVME); otherwise the
// file's records so far are encoded again, their bytes dropped, and their
// size and CRC64NVME checked against the token's: that rebuilds the
// metadata of the row groups already in the file and the open row group.
// A mismatch is a filebody.Stale.
func (p *Writers) Resume(ctx context.Context, w io.Writer, at filebody.Point, fail filebody.Fail) (filebody.Body, error) {
	if f := p.take(at.Upload); f != nil && f.records == at.FileRecords && f.out.n == at.Size && f.out.crc == at.CRC {
		f.out.w = w
		f.upload = ""
		return &body{p: p, f: f, fail: fail}, nil
	}
	first := at.Start - at.FileRecords
	if first < 0 || at.Start > int64(len(at.Lines)) {
		return nil, fail("recover", fmt.Errorf("a file of %d records before record %d does not fit the batch of %d records", at.FileRecords, at.Start, len(at.Lines)))
	}
	f := p.start(nil)
	var bytes int64
	for _, line := range at.Lines[first:at.Start] {
		if err := f.write(line); err != nil {
			return nil, fail("re-encode", err)
		}
		bytes += int64(len(line))
	}
	if bytes != at.FileBytes {
		return nil, fail("recover", fmt.Errorf("the file's %d records before record %d hold %d bytes in the batch, %d when it was checkpointed", at.FileRecords, at.Start, bytes, at.FileBytes))
	}
	if p.o.Replayed != nil {
		p.o.Replayed(ctx, at.FileRecords)
	}
	if f.out.n != at.Size || f.out.crc != at.CRC {
		return nil, fail("recover", fmt.Errorf("%w: %d records give %d bytes with CRC64NVME %016x, the token %d bytes with %016x (was the Parquet library or a Parquet setting changed?)",
			errReplay, at.FileRecords, f.out.n, f.out.crc, at.Size, at.CRC))
	}
	f.out.w = w
	return &body{p: p, f: f, fail: fail}, nil
}

func (b *body) Write(rec []byte) error {
	if err := b.f.write(rec); err != nil {
		return b.fail("write", err)
	}
	return nil
}

// Sync does nothing: row groups end by the records alone, never at a sync
// point.
func (b *body) Sync() error { return nil }

func (b *body) Synced() bool { return true }

func (b *body) Finish() error {
	if err := b.f.finish(); err != nil {
		return b.fail("close", err)
	}
	return nil
}

// Summary is what the finished file's footer records.
func (b *body) Summary() filebody.Summary { return b.f.summary }

// Leave suspends the encoder of a checkpointed file for a resume in this
// instance.
func (b *body) Leave(upload string) {
	if upload != "" {
		b.p.suspend(upload, b.f)
	}
	b.f = nil
}
