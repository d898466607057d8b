package sink

import (
	"context"
	"io"

	"github.com/s3once/s3once/recoverable"
)

// fileBody turns the records of one open file into the file's bytes, which
// it writes to the file's stream. The writer calls write for each record in
// order, sync at each sync point, and finish at the file's end; or leave,
// when the file stays open past the writer's call (a checkpoint or a
// failure). After finish or leave the body is not used again. Its errors
// name the file: they come from the failFunc it was opened with.
type fileBody interface {
	// write adds a record.
	write(rec []byte) error
	// sync ends what may not span a sync point (a compressed member).
	sync() error
	// synced reports whether the body has written nothing since the file's
	// last sync point, so that a checkpoint may stand where it is.
	synced() bool
	// finish writes the file's last bytes (the end of its last member, a
	// footer); the file's bytes are then complete.
	finish() error
	// footer is what a finished Parquet file's footer records; empty for
	// the line formats.
	footer() ParquetFooter
	// leave lets go of the file without ending it. upload is the upload a
	// checkpoint has just persisted the file in, which a resume in this
	// writer instance may go on with; it is empty after a failure, when the
	// body's state is not to be reused.
	leave(upload string)
}

// bodyKind makes the bodies of the files of one writer instance: lineBodies
// for the line formats, *parquetWriters for Parquet.
type bodyKind interface {
	// open begins the body of a new file that writes to w.
	open(w io.Writer, fail failFunc) (fileBody, error)
	// resume readies the body of the file at, just recovered from its
	// resume token, to go on writing to w. An error for which mustRewrite
	// is true means that the file must be written again from its first
	// record.
	resume(ctx context.Context, w io.Writer, at resumePoint, fail failFunc) (fileBody, error)
}

// failFunc names the file in err, which step what of writing it returned
// (fileWriter.fail).
type failFunc func(what string, err error) error

// resumePoint is where a file recovered from its resume token stands.
type resumePoint struct {
	token recoverable.ResumeToken
	rest  restriction // the residual: the FileRecords records before Start are in the file
	lines [][]byte    // the batch's records
}

// staleBody is the type of a resume error after which the writer writes the
// file again from its first record (mustRewrite): the records the file holds
// do not give the bytes its token describes, so this build encodes them
// otherwise than the one that wrote them.
type staleBody string

func (e staleBody) Error() string { return string(e) }

// newBodyKind returns the body kind of s's files, whose format is f and
// codec c.
func newBodyKind(s settings, f Format, c Codec) (bodyKind, error) {
	if s.Parquet != nil {
		p, err := newParquetWriters(s)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	k := &lineBodies{codec: c}
	if h, ok := f.(FileHeader); ok {
		k.header = h.FileHeader()
	}
	return k, nil
}

// lineBodies is the body kind of the line formats: a file is the format's
// header, if it has one, then the records, compressed by the codec as one
// member (stream) per stretch between two sync points.
type lineBodies struct {
	codec  Codec
	header []byte
	comp   io.WriteCloser // reused between members
}

// lineBody is the body of one file of a line format.
type lineBody struct {
	k      *lineBodies
	w      io.Writer
	fail   failFunc
	member io.WriteCloser // the open compressed member, or nil
}

func (k *lineBodies) open(w io.Writer, fail failFunc) (fileBody, error) {
	b := &lineBody{k: k, w: w, fail: fail}
	if len(k.header) == 0 {
		return b, nil
	}
	if err := b.begin(); err != nil {
		return nil, err
	}
	if _, err := b.member.Write(k.header); err != nil {
		b.leave("")
		return nil, fail("write header", err)
	}
	return b, nil
}

// resume goes on after the file's last sync point, where every member has
// ended: nothing of the file so far is needed.
func (k *lineBodies) resume(_ context.Context, w io.Writer, _ resumePoint, fail failFunc) (fileBody, error) {
	return &lineBody{k: k, w: w, fail: fail}, nil
}

func (b *lineBody) write(rec []byte) error {
	if b.member == nil {
		if err := b.begin(); err != nil {
			return err
		}
	}
	if _, err := b.member.Write(rec); err != nil {
		return b.fail("write", err)
	}
	return nil
}

// begin starts a compressed member, with the kind's compressor when it can
// be reset.
func (b *lineBody) begin() error {
	if r, ok := b.k.comp.(interface{ Reset(io.Writer) }); ok {
		r.Reset(b.w)
		b.member = b.k.comp
		return nil
	}
	c, err := b.k.codec.NewWriter(b.w)
	if err != nil {
		return b.fail("start compression", err)
	}
	b.k.comp, b.member = c, c
	return nil
}

// sync ends the open compressed member.
func (b *lineBody) sync() error {
	if b.member == nil {
		return nil
	}
	m := b.member
	b.member = nil
	if err := m.Close(); err != nil {
		b.k.comp = nil // its state is unknown
		return b.fail("end compressed member", err)
	}
	return nil
}

func (b *lineBody) synced() bool { return b.member == nil }

func (b *lineBody) finish() error { return b.sync() }

func (b *lineBody) leave(string) {
	if b.member != nil {
		b.k.comp = nil // half-written: never reuse
		b.member = nil
	}
}

func (b *lineBody) footer() ParquetFooter { return ParquetFooter{} }
