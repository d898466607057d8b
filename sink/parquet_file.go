package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/minio/crc64nvme"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/s3once/s3once/internal/parquetrow"
)

// errParquetReplay is wrapped by the error of a recovery whose re-encoded
// records do not give the bytes the token describes: the library or its
// settings changed since the checkpoint. The writer then writes the file
// again from its first record.
var errParquetReplay error = staleBody("s3once sink: re-encoding the records of an open Parquet file does not give the bytes its token describes")

// maxSuspendedParquet bounds the Parquet files a writer instance keeps
// encoders for between a self-checkpoint and its resume.
const maxSuspendedParquet = 2

// parquetWriters is a writer DoFn instance's Parquet state: how to encode,
// and the encoders of files it checkpointed, by upload, so that a resume in
// the same instance goes on without re-encoding the file's records.
type parquetWriters struct {
	s      parquetSettings
	codec  *parquetrow.Codec
	schema *parquet.Schema
	pages  parquet.WriterOption
	// version is the output version; version 2 bounds the statistics of
	// byte-array columns (parquet_stats.go), with these options.
	version int
	stats   []parquet.WriterOption

	mu        sync.Mutex
	suspended []*parquetFile // oldest first
}

// newParquetWriters returns nil, nil unless s's format is Parquet.
func newParquetWriters(s settings) (*parquetWriters, error) {
	if s.Parquet == nil {
		return nil, nil
	}
	if s.Parquet.Row == nil || s.Parquet.Row.T == nil {
		return nil, errors.New("the pipeline was built without the Parquet element type")
	}
	row, err := s.parquetRowType()
	if err != nil {
		return nil, err
	}
	codec, err := parquetRowCodec(row)
	if err != nil {
		return nil, err
	}
	schema, err := parquetSchema(row)
	if err != nil {
		return nil, err
	}
	pages, ok := parquetCodecs[s.Parquet.Compression]
	if !ok {
		return nil, fmt.Errorf("unknown Parquet compression %q", s.Parquet.Compression)
	}
	if _, ok := parquetCreatedBy[s.OutputVersion]; !ok {
		return nil, fmt.Errorf("output version %d is not 1 or %d", s.OutputVersion, LatestOutputVersion)
	}
	p := &parquetWriters{s: *s.Parquet, codec: codec, schema: schema, pages: parquet.Compression(pages), version: s.OutputVersion}
	if p.version >= 2 {
		for _, path := range byteArrayColumns(schema) {
			p.stats = append(p.stats, parquet.SkipPageStatistics(path...))
		}
	}
	return p, nil
}

// parquetFile encodes one file's records as Parquet. Row groups end by the
// records alone; bytes reach the output only when a row group ends, and at
// the end of the file.
type parquetFile struct {
	pw    *parquet.Writer
	out   *parquetOutput
	codec *parquetrow.Codec
	val   reflect.Value // decoded into, record after record

	settings parquetSettings
	records  int64 // records in the file
	rgBytes  int64 // record bytes in the open row group
	rgRows   int64 // records in the open row group

	upload  string // the upload, while suspended
	version int    // the output version

	schema *parquet.Schema
	footer ParquetFooter // what the footer records, once finished
}

// parquetOutput counts and checksums what the encoder writes, and passes it
// on to w; a nil w drops it (a replay).
type parquetOutput struct {
	w   io.Writer
	n   int64
	crc uint64
	// hold, when not nil, takes what is written instead (the end of a
	// file of output version 2, whose footer is rewritten before it goes
	// on).
	hold *bytes.Buffer
}

func (o *parquetOutput) Write(p []byte) (int, error) {
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
func (p *parquetWriters) start(w io.Writer) *parquetFile {
	out := &parquetOutput{w: w}
	opts := []parquet.WriterOption{
		p.schema,
		p.pages,
		&parquet.WriterConfig{CreatedBy: parquetCreatedBy[p.version]},
		// Unbuffered: a row group is in the output as soon as it ends, so a
		// checkpoint persists exactly the row groups ended so far.
		parquet.WriteBufferSize(0),
	}
	opts = append(opts, p.stats...)
	return &parquetFile{
		pw:       parquet.NewWriter(out, opts...),
		out:      out,
		codec:    p.codec,
		val:      reflect.New(p.codec.Type()).Elem(),
		settings: p.s,
		version:  p.version,
		schema:   p.schema,
	}
}

// write adds a record (its row encoding) to the file.
func (f *parquetFile) write(rec []byte) error {
	if err := f.codec.Decode(rec, f.val); err != nil {
		return err
	}
	if err := f.pw.Write(f.val.Addr().Interface()); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	f.records++
	f.rgRows++
	f.rgBytes += int64(len(rec))
	if f.rgBytes >= f.settings.RowGroupBytes || (f.settings.RowGroupRecords > 0 && f.rgRows >= f.settings.RowGroupRecords) {
		if err := f.pw.Flush(); err != nil {
			return fmt.Errorf("parquet: end row group: %w", err)
		}
		f.rgBytes, f.rgRows = 0, 0
	}
	return nil
}

// finish ends the open row group and writes the footer, and keeps what
// the footer records (summarizeFooter). In output version 2 the footer's
// byte-array statistics are bounded first (boundFooterStats).
func (f *parquetFile) finish() error {
	f.out.hold = &bytes.Buffer{}
	err := f.pw.Close()
	tail := f.out.hold.Bytes()
	f.out.hold = nil
	if err != nil {
		return fmt.Errorf("parquet: write footer: %w", err)
	}
	var md *format.FileMetaData
	if f.version < 2 {
		_, md, err = readFooter(tail)
	} else {
		tail, md, err = boundFooterStats(tail, parquetStatBytes)
	}
	if err != nil {
		return fmt.Errorf("parquet: the footer's statistics: %w", err)
	}
	if _, err := f.out.Write(tail); err != nil {
		return fmt.Errorf("parquet: write footer: %w", err)
	}
	f.footer = summarizeFooter(md, f.schema)
	return nil
}

// suspend keeps f, the encoder of a file just checkpointed under upload, for
// a resume in this instance. The oldest suspended file goes when there are
// more than maxSuspendedParquet: a resume elsewhere, or never, must not pin
// memory.
func (p *parquetWriters) suspend(upload string, f *parquetFile) {
	f.out.w = nil
	f.upload = upload
	p.mu.Lock()
	defer p.mu.Unlock()
	p.suspended = append(p.suspended, f)
	if n := len(p.suspended) - maxSuspendedParquet; n > 0 {
		clear(p.suspended[:n])
		p.suspended = p.suspended[n:]
	}
}

// take removes and returns the suspended encoder of upload, or nil.
func (p *parquetWriters) take(upload string) *parquetFile {
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

// Counters of Parquet resumes that re-encoded the file's records, and of
// those records.
var (
	metricParquetReplays        = beam.NewCounter("s3once", "parquet_replays")
	metricParquetReplayedRecord = beam.NewCounter("s3once", "parquet_records_replayed")
)

// parquetBody is the body of one Parquet file: its encoder, and the
// instance's Parquet state it came from.
type parquetBody struct {
	p    *parquetWriters
	f    *parquetFile
	fail failFunc
}

func (p *parquetWriters) open(w io.Writer, fail failFunc) (fileBody, error) {
	return &parquetBody{p: p, f: p.start(w), fail: fail}, nil
}

// resume readies the encoder of the file at names. The encoder this
// instance suspended at that checkpoint goes on when it stands exactly
// where the token does (records, bytes and CRC64NVME); otherwise the file's
// records so far are encoded again, their bytes dropped, and their size and
// CRC64NVME checked against the token's: that rebuilds the metadata of the
// row groups already in the file and the open row group. A mismatch wraps
// errParquetReplay.
func (p *parquetWriters) resume(ctx context.Context, w io.Writer, at resumePoint, fail failFunc) (fileBody, error) {
	rest := at.rest
	size, crc := at.token.Size(), at.token.CRC()
	if f := p.take(at.token.UploadID); f != nil && f.records == rest.FileRecords && f.out.n == size && f.out.crc == crc {
		f.out.w = w
		f.upload = ""
		return &parquetBody{p: p, f: f, fail: fail}, nil
	}
	first := rest.Start - rest.FileRecords
	if first < 0 || rest.Start > int64(len(at.lines)) {
		return nil, fail("recover", fmt.Errorf("the restriction %v does not match the batch of %d records", rest, len(at.lines)))
	}
	f := p.start(nil)
	var bytes int64
	for _, line := range at.lines[first:rest.Start] {
		if err := f.write(line); err != nil {
			return nil, fail("re-encode", err)
		}
		bytes += int64(len(line))
	}
	if bytes != rest.FileBytes {
		return nil, fail("recover", fmt.Errorf("the restriction %v does not match the batch: its file's records hold %d bytes", rest, bytes))
	}
	metricParquetReplays.Inc(ctx, 1)
	metricParquetReplayedRecord.Inc(ctx, rest.FileRecords)
	if f.out.n != size || f.out.crc != crc {
		return nil, fail("recover", fmt.Errorf("%w: %d records give %d bytes with CRC64NVME %016x, the token %d bytes with %016x (was the Parquet library or a Parquet setting changed?)",
			errParquetReplay, rest.FileRecords, f.out.n, f.out.crc, size, crc))
	}
	f.out.w = w
	return &parquetBody{p: p, f: f, fail: fail}, nil
}

func (b *parquetBody) write(rec []byte) error {
	if err := b.f.write(rec); err != nil {
		return b.fail("write", err)
	}
	return nil
}

// sync does nothing: row groups end by the records alone, never at a sync
// point.
func (b *parquetBody) sync() error { return nil }

func (b *parquetBody) synced() bool { return true }

func (b *parquetBody) finish() error {
	if err := b.f.finish(); err != nil {
		return b.fail("close", err)
	}
	return nil
}

// footer is what the finished file's footer records.
func (b *parquetBody) footer() ParquetFooter { return b.f.footer }

// leave suspends the encoder of a checkpointed file for a resume in this
// instance.
func (b *parquetBody) leave(upload string) {
	if upload != "" {
		b.p.suspend(upload, b.f)
	}
	b.f = nil
}
