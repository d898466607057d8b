package coder

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Frame layout; FORMAT.md gives the details.
const (
	headerLen  = 4 + 1 + 4 // magic, version, payload length
	trailerLen = 4         // CRC-32C of everything before it

	// Overhead is the number of bytes a frame adds to its payload.
	Overhead = headerLen + trailerLen
	// MaxPayload is the largest payload Frame writes and Unframe accepts, in
	// bytes. Tokens live in runner checkpoints: the largest resume token is
	// under 70 KiB.
	MaxPayload = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Frame wraps payload in the framing every encoding of this package uses:
// magic, version, the payload's length, the payload, and a CRC-32C over all of
// it. Another package (the sink, for its restriction) may use it for its own
// values: pick a magic no other kind uses, start at version 1, and never reuse
// a version number for a different payload layout.
//
// Frame returns an error matching ErrMalformed when version is 0 (never a
// valid version), or ErrTooLarge when payload exceeds MaxPayload. The result
// does not alias payload.
func Frame(magic [4]byte, version byte, payload []byte) ([]byte, error) {
	b, err := beginFrame(magic, version, len(payload))
	if err != nil {
		return nil, err
	}
	return endFrame(append(b, payload...))
}

// Unframe checks a frame written by Frame with the same magic and returns its
// version and payload. The payload aliases b.
//
// It accepts exactly one whole frame whose version is between 1 and
// maxVersion; otherwise it returns an error matching
// recoverable.ErrInvalidToken and one of ErrBadMagic (another magic),
// ErrTruncated (b ends before the frame does), ErrTooLarge (the declared
// length exceeds MaxPayload), ErrChecksum (the CRC-32C does not match),
// ErrMalformed (bytes after the frame) or ErrVersion (a *VersionError). The
// checksum is checked before the version, so a damaged version byte is
// reported as damage, not as a version from the future.
func Unframe(magic [4]byte, maxVersion byte, b []byte) (version byte, payload []byte, err error) {
	return unframe(fmt.Sprintf("%q frame", magic[:]), magic, maxVersion, b)
}

// beginFrame starts a frame whose payload is about payloadHint bytes long;
// append the payload to the result and pass it to endFrame.
func beginFrame(magic [4]byte, version byte, payloadHint int) ([]byte, error) {
	if version == 0 {
		return nil, invalid(ErrMalformed, "frame version 0 is reserved; versions start at 1")
	}
	if payloadHint < 0 || payloadHint > MaxPayload {
		payloadHint = 0
	}
	b := make([]byte, headerLen, Overhead+payloadHint)
	copy(b, magic[:])
	b[4] = version
	return b, nil
}

// endFrame fills in the payload length of a frame begun by beginFrame and
// appends its checksum.
func endFrame(b []byte) ([]byte, error) {
	n := len(b) - headerLen
	if n > MaxPayload {
		return nil, invalid(ErrTooLarge, "payload of %d bytes exceeds the bound of %d", n, MaxPayload)
	}
	binary.BigEndian.PutUint32(b[5:headerLen], uint32(n))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// unframe is Unframe with the name of the kind of value for error messages.
func unframe(kind string, magic [4]byte, maxVersion byte, b []byte) (byte, []byte, error) {
	return unframeBounded(kind, magic, maxVersion, MaxPayload, b)
}

// unframeBounded is unframe with a payload bound of the caller's.
func unframeBounded(kind string, magic [4]byte, maxVersion byte, bound int64, b []byte) (byte, []byte, error) {
	if len(b) >= len(magic) && [4]byte(b[:4]) != magic {
		return 0, nil, invalid(ErrBadMagic, "%s must start with %q, found %q", kind, magic[:], b[:4])
	}
	if len(b) < Overhead {
		return 0, nil, invalid(ErrTruncated, "%s of %d bytes is shorter than the %d-byte frame", kind, len(b), Overhead)
	}
	n := binary.BigEndian.Uint32(b[5:headerLen])
	if int64(n) > bound {
		return 0, nil, invalid(ErrTooLarge, "%s declares a payload of %d bytes, the bound is %d", kind, n, bound)
	}
	end := Overhead + int(n)
	if end > len(b) {
		return 0, nil, invalid(ErrTruncated, "%s declares %d bytes but the input holds %d (cut off, or the length field is damaged)", kind, end, len(b))
	}
	want := binary.BigEndian.Uint32(b[end-trailerLen : end])
	if got := crc32.Checksum(b[:end-trailerLen], castagnoli); got != want {
		return 0, nil, invalid(ErrChecksum, "%s CRC-32C is %08x, stored %08x (the bytes were altered)", kind, got, want)
	}
	if end < len(b) {
		return 0, nil, invalid(ErrMalformed, "%s is followed by %d unexpected bytes", kind, len(b)-end)
	}
	v := b[4]
	if v == 0 || v > maxVersion {
		return 0, nil, &VersionError{Kind: kind, Got: v, Max: maxVersion}
	}
	return v, b[headerLen : end-trailerLen], nil
}

// Framing is the frame of one kind of value with a payload bound of its own:
// Frame and Unframe are Framing{magic, MaxPayload}. A kind whose values are
// larger than MaxPayload (the sink's batches reach gigabytes) picks its
// bound; the frame's length field is four bytes, so no bound exceeds
// MaxFramePayload.
//
// Begin and End write a frame around a payload the caller appends in place,
// so the payload is written once, into the frame, and never copied; Unframe
// returns the payload as a sub-slice of its input.
type Framing struct {
	Magic [4]byte
	// MaxPayload bounds the payload, in bytes; 0 means MaxPayload.
	MaxPayload int64
}

// MaxFramePayload is the largest bound a Framing may have: the most the
// frame's four-byte length field can say.
const MaxFramePayload = 1<<32 - 1

func (f Framing) bound() int64 {
	if f.MaxPayload <= 0 {
		return MaxPayload
	}
	return min(f.MaxPayload, MaxFramePayload)
}

// Begin starts a frame of the given version; capacity is room for the
// payload the caller is about to append (a hint: the slice grows as append
// needs). Append the payload to the result, then pass it to End. Begin
// refuses version 0 with an error matching ErrMalformed.
func (f Framing) Begin(version byte, capacity int) ([]byte, error) {
	if version == 0 {
		return nil, invalid(ErrMalformed, "frame version 0 is reserved; versions start at 1")
	}
	capacity = int(min(max(int64(capacity), 0), f.bound()))
	b := make([]byte, headerLen, Overhead+capacity)
	copy(b, f.Magic[:])
	b[4] = version
	return b, nil
}

// End finishes a frame begun by Begin, whose payload is everything appended
// after the header: it fills in the payload's length and appends the
// checksum, in place. It returns an error matching ErrTooLarge when the
// payload exceeds the bound, or ErrMalformed when b is not a begun frame of
// f's magic.
func (f Framing) End(b []byte) ([]byte, error) {
	if len(b) < headerLen || [4]byte(b[:4]) != f.Magic || b[4] == 0 {
		return nil, invalid(ErrMalformed, "%q frame: End needs a frame begun by Begin", f.Magic[:])
	}
	if n := int64(len(b) - headerLen); n > f.bound() {
		return nil, invalid(ErrTooLarge, "%q frame: payload of %d bytes exceeds the bound of %d", f.Magic[:], n, f.bound())
	}
	binary.BigEndian.PutUint32(b[5:headerLen], uint32(len(b)-headerLen))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// Unframe is the package's Unframe with f's magic and bound: it checks one
// whole frame and returns its version and its payload, which aliases b.
func (f Framing) Unframe(maxVersion byte, b []byte) (version byte, payload []byte, err error) {
	return unframeBounded(fmt.Sprintf("%q frame", f.Magic[:]), f.Magic, maxVersion, f.bound(), b)
}

// FieldReader takes fields off a payload in order, the way this package's
// decoders do: minimal uvarints under a bound, and length-prefixed byte
// strings that alias the payload. The first failure sticks: later reads
// return zero values, and Finish reports it. Every failure matches
// recoverable.ErrInvalidToken and one of this package's sentinel errors.
type FieldReader struct {
	r reader
}

// NewFieldReader reads payload; kind names the kind of value in errors.
func NewFieldReader(kind string, payload []byte) *FieldReader {
	return &FieldReader{r: reader{kind: kind, b: payload}}
}

// Uvarint reads a minimally encoded uvarint of at most max.
func (f *FieldReader) Uvarint(field string, max uint64) uint64 {
	r := &f.r
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.err = invalid(ErrTruncated, "%s payload ends inside %s", r.kind, field)
		return 0
	case n < 0:
		r.err = invalid(ErrTooLarge, "%s %s overflows 64 bits", r.kind, field)
		return 0
	case n != uvarintLen(v):
		r.err = invalid(ErrMalformed, "%s %s is not minimally encoded", r.kind, field)
		return 0
	case v > max:
		r.err = invalid(ErrTooLarge, "%s %s is %d, the bound is %d", r.kind, field, v, max)
		return 0
	}
	r.off += n
	return v
}

// Bytes reads a uvarint length of at most max and that many bytes, which
// alias the payload.
func (f *FieldReader) Bytes(field string, max int) []byte {
	p := f.r.take(field, f.r.length(field, 0, max))
	return p[:len(p):len(p)]
}

// String reads a length-prefixed string of at most max bytes.
func (f *FieldReader) String(field string, max int) string {
	return string(f.Bytes(field, max))
}

// Err returns the first failure so far, if any; unlike Finish, it does not
// look at unread bytes.
func (f *FieldReader) Err() error { return f.r.err }

// Remaining is the number of unread bytes.
func (f *FieldReader) Remaining() int { return len(f.r.b) - f.r.off }

// Finish returns the first failure, or an error matching ErrMalformed when
// bytes are left unread.
func (f *FieldReader) Finish() error { return f.r.finish() }
