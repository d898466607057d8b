package format

import (
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Codec compresses files. The sink's writer compresses a file as a sequence
// of independent streams (gzip members, zstd frames), one per stretch of
// records between two sync points (see sink.Tuning's CheckpointBytes), so
// that it can stop at a checkpoint and carry on in another process. A Codec must therefore
// produce a format in which the concatenation of streams is itself a valid
// stream (gzip, zstd, bzip2, lz4 frames and xz all are), and it must be
// deterministic: equal input gives equal bytes.
//
// Register codecs with RegisterCodec in an init function.
type Codec interface {
	// NewWriter starts a stream that writes to w. Close ends the stream and
	// must not close w. If the returned writer has a Reset(io.Writer) method,
	// the sink calls it to start the next stream instead of calling NewWriter
	// again.
	NewWriter(w io.Writer) (io.WriteCloser, error)
	// Extension is the file name suffix, such as ".gz"; empty for none.
	Extension() string
	// ContentType is the MIME type of a compressed file; empty keeps the
	// format's.
	ContentType() string
}

var codecs = registry[Codec]{kind: "codec", field: "Compression", fn: "format.RegisterCodec"}

// RegisterCodec makes c available to sink.Config.Compression under name. It
// panics if name is empty or taken, or c is nil: registration is a program's
// set-up, done in init functions.
func RegisterCodec(name string, c Codec) { codecs.register(name, c) }

// LookupCodec returns the codec registered under name, or an error that
// names Config.Compression and lists the registered names.
func LookupCodec(name string) (Codec, error) { return codecs.lookup(name) }

func init() {
	RegisterCodec("none", noCompression{})
	RegisterCodec("gzip", Gzip{})
	RegisterCodec("zstd", Zstd{})
}

// noCompression writes records as they are.
type noCompression struct{}

func (noCompression) NewWriter(w io.Writer) (io.WriteCloser, error) { return &plainWriter{w}, nil }
func (noCompression) Extension() string                             { return "" }
func (noCompression) ContentType() string                           { return "" }

type plainWriter struct{ w io.Writer }

func (p *plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *plainWriter) Close() error                { return nil }
func (p *plainWriter) Reset(w io.Writer)           { p.w = w }

// Gzip compresses with github.com/klauspost/compress/gzip. Files are
// concatenations of gzip members, which gunzip, Go's gzip.Reader and every
// common reader take as one stream. Level zero means the default level.
type Gzip struct {
	Level int
}

// NewWriter starts a gzip member on w.
func (g Gzip) NewWriter(w io.Writer) (io.WriteCloser, error) {
	level := g.Level
	if level == 0 {
		level = gzip.DefaultCompression
	}
	// No name, no modification time: the header is the same every time.
	zw, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return zw, nil
}

func (Gzip) Extension() string   { return ".gz" }
func (Gzip) ContentType() string { return "application/gzip" }

// Zstd compresses with github.com/klauspost/compress/zstd, synchronously (one
// goroutine), so that its output depends on its input alone. Files are
// concatenations of zstd frames. Level is a zstd level, 1 (fastest) to 22,
// as the zstd command takes it, which the library maps to the nearest of
// its four encoders (zstd.EncoderLevelFromZstd); zero means the library's
// default, zstd level 3.
type Zstd struct {
	Level int
}

// NewWriter starts a zstd frame on w.
func (z Zstd) NewWriter(w io.Writer) (io.WriteCloser, error) {
	level := zstd.SpeedDefault
	switch {
	case z.Level < 0 || z.Level > 22:
		return nil, fmt.Errorf("zstd: level %d is not in [1, 22] (0 means the default)", z.Level)
	case z.Level > 0:
		level = zstd.EncoderLevelFromZstd(z.Level)
	}
	enc, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(level))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return enc, nil
}

func (Zstd) Extension() string   { return ".zst" }
func (Zstd) ContentType() string { return "application/zstd" }
