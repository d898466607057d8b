// Package filebody turns the records of one open file into the file's
// bytes: the part of a file's writing that depends on its format. The
// sink's writer rolls files and places sync points and checkpoints by the
// records alone, and hands each file's records to a Body, which writes the
// file's bytes to the file's stream. Lines is the Kind of the line formats;
// package internal/parquetbody has Parquet's.
package filebody

import (
	"context"
	"io"
)

// Body turns the records of one open file into the file's bytes, which it
// writes to the file's stream. The writer calls Write for each record in
// order, Sync at each sync point, and Finish at the file's end; or Leave,
// when the file stays open past the writer's call (a checkpoint or a
// failure). After Finish or Leave the body is not used again. Its errors
// name the file: they come from the Fail it was opened with.
type Body interface {
	// Write adds a record.
	Write(rec []byte) error
	// Sync ends what may not span a sync point (a compressed member).
	Sync() error
	// Synced reports whether the body has written nothing since the file's
	// last sync point, so that a checkpoint may stand where it is.
	Synced() bool
	// Finish writes the file's last bytes (the end of its last member, a
	// footer); the file's bytes are then complete.
	Finish() error
	// Summary is what a finished body knows of the file beyond its bytes.
	Summary() Summary
	// Leave lets go of the file without ending it. upload is the upload a
	// checkpoint has just persisted the file in, which a resume in this
	// writer instance may go on with; it is empty after a failure, when the
	// body's state is not to be reused.
	Leave(upload string)
}

// Kind makes the bodies of the files of one writer instance.
type Kind interface {
	// Open begins the body of a new file that writes to w.
	Open(w io.Writer, fail Fail) (Body, error)
	// Resume readies the body of the file at, just recovered from its
	// resume token, to go on writing to w. An error that is a Stale means
	// that the file must be written again from its first record.
	Resume(ctx context.Context, w io.Writer, at Point, fail Fail) (Body, error)
}

// Fail names the file in err, which step what of writing it returned.
type Fail func(what string, err error) error

// Point is where a file recovered from its resume token stands.
type Point struct {
	// Upload is the multipart upload the token names; Size and CRC are the
	// length and CRC64NVME of the file's bytes so far.
	Upload string
	Size   int64
	CRC    uint64
	// Lines are the records of the file's batch. Record Start is the
	// file's next one, and the FileRecords records before it, of FileBytes
	// bytes, are in the file.
	Lines       [][]byte
	Start       int64
	FileRecords int64
	FileBytes   int64
}

// Stale is the type of a resume error after which the writer writes the
// file again from its first record: the records the file holds do not give
// the bytes its token describes, so this build encodes them otherwise than
// the one that wrote them.
type Stale string

func (e Stale) Error() string { return string(e) }

// Summary is what a finished file's body knows of the file beyond its
// bytes, for the file's result: where a reader may split the file, and
// what each column holds. A format without columns has none (the zero
// Summary).
type Summary struct {
	// SplitOffsets are the offsets in the file where a reader may split
	// it, in file order (a Parquet file's row groups).
	SplitOffsets []int64
	// Columns holds one entry per leaf column, in schema order.
	Columns []Column
}

// Column is what a file records of one leaf column, summed over the file.
type Column struct {
	// Path is the column's path in the file's schema.
	Path []string
	// Bytes is the size of the column's data in the file, compressed,
	// headers included.
	Bytes int64
	// Values counts its values, nulls included; Nulls the null values.
	Values int64
	Nulls  int64
	// Min and Max bound its non-null values, in the format's plain
	// encoding of them; HasBounds is false when there are none for the
	// whole file.
	Min       []byte
	Max       []byte
	HasBounds bool
}

// Compressor starts the compressed streams (members) of a line format's
// files; package format's Codec is one.
type Compressor interface {
	// NewWriter starts a stream that writes to w. Close ends the stream
	// and must not close w. If the returned writer has a Reset(io.Writer)
	// method, it is called to start the next stream instead of NewWriter.
	NewWriter(w io.Writer) (io.WriteCloser, error)
}

// Lines is the body kind of the line formats: a file is the format's
// header, if it has one, then the records, compressed by c as one member
// (stream) per stretch between two sync points.
func Lines(c Compressor, header []byte) Kind {
	return &lineBodies{codec: c, header: header}
}

type lineBodies struct {
	codec  Compressor
	header []byte
	comp   io.WriteCloser // reused between members
}

// lineBody is the body of one file of a line format.
type lineBody struct {
	k      *lineBodies
	w      io.Writer
	fail   Fail
	member io.WriteCloser // the open compressed member, or nil
}

func (k *lineBodies) Open(w io.Writer, fail Fail) (Body, error) {
	b := &lineBody{k: k, w: w, fail: fail}
	if len(k.header) == 0 {
		return b, nil
	}
	if err := b.begin(); err != nil {
		return nil, err
	}
	if _, err := b.member.Write(k.header); err != nil {
		b.Leave("")
		return nil, fail("write header", err)
	}
	return b, nil
}

// Resume goes on after the file's last sync point, where every member has
// ended: nothing of the file so far is needed.
func (k *lineBodies) Resume(_ context.Context, w io.Writer, _ Point, fail Fail) (Body, error) {
	return &lineBody{k: k, w: w, fail: fail}, nil
}

func (b *lineBody) Write(rec []byte) error {
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

// Sync ends the open compressed member.
func (b *lineBody) Sync() error {
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

func (b *lineBody) Synced() bool { return b.member == nil }

func (b *lineBody) Finish() error { return b.Sync() }

func (b *lineBody) Leave(string) {
	if b.member != nil {
		b.k.comp = nil // half-written: never reuse
		b.member = nil
	}
}

func (b *lineBody) Summary() Summary { return Summary{} }
