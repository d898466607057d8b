package frame

import (
	"encoding/binary"
	"math"
)

// Reader takes fields off a payload in order: fixed-width big-endian
// integers, minimal uvarints under a bound, and length-prefixed byte strings
// that alias the payload. The first failure sticks: later reads return zero
// values, and Finish reports it, so a decoder can read every field and check
// once. Every failure matches one of this package's sentinels.
type Reader struct {
	kind string // the kind of value, for messages
	b    []byte // the payload
	off  int    // the next unread byte of b
	err  error
}

// NewReader reads payload; kind names the kind of value in errors.
func NewReader(kind string, payload []byte) *Reader {
	return &Reader{kind: kind, b: payload}
}

// Kind is the kind of value the reader was made for.
func (r *Reader) Kind() string { return r.kind }

// where is the position of the next unread byte, counted from the frame's
// first byte.
func (r *Reader) where() int { return HeaderLen + r.off }

// Take reads the next n bytes, which alias the payload.
func (r *Reader) Take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = Invalid(ErrTruncated, "%s payload ends at byte %d inside %s, which needs %d bytes", r.kind, HeaderLen+len(r.b), field, n)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

// U8 reads one byte.
func (r *Reader) U8(field string) byte {
	if p := r.Take(field, 1); p != nil {
		return p[0]
	}
	return 0
}

// U32 reads a big-endian uint32.
func (r *Reader) U32(field string) uint32 {
	if p := r.Take(field, 4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

// U64 reads a big-endian uint64.
func (r *Reader) U64(field string) uint64 {
	if p := r.Take(field, 8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// I64 reads a fixed-width size, which must not have its top bit set.
func (r *Reader) I64(field string) int64 {
	v := r.U64(field)
	if v > math.MaxInt64 {
		r.Fail(Invalid(ErrMalformed, "%s %s is negative", r.kind, field))
		return 0
	}
	return int64(v)
}

// Uvarint reads a minimally encoded uvarint of at most max.
func (r *Reader) Uvarint(field string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.err = Invalid(ErrTruncated, "%s payload ends inside %s", r.kind, field)
		return 0
	case n < 0:
		r.err = Invalid(ErrTooLarge, "%s %s overflows 64 bits", r.kind, field)
		return 0
	case n != UvarintLen(v):
		r.err = Invalid(ErrMalformed, "%s %s is not minimally encoded", r.kind, field)
		return 0
	case v > max:
		r.err = Invalid(ErrTooLarge, "%s %s is %d, the bound is %d", r.kind, field, v, max)
		return 0
	}
	r.off += n
	return v
}

// length reads a uvarint length of at least lo and at most hi, and no more
// than the unread bytes: nothing is allocated from a length that the input
// cannot back.
func (r *Reader) length(field string, lo, hi int) int {
	if r.err != nil {
		return 0
	}
	at := r.where()
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.err = Invalid(ErrTruncated, "%s payload ends inside the length of %s at byte %d", r.kind, field, at)
		return 0
	case n < 0:
		r.err = Invalid(ErrTooLarge, "%s length of %s at byte %d overflows 64 bits", r.kind, field, at)
		return 0
	case n != UvarintLen(v):
		r.err = Invalid(ErrMalformed, "%s length of %s at byte %d is not minimally encoded", r.kind, field, at)
		return 0
	case v > uint64(hi):
		r.err = Invalid(ErrTooLarge, "%s %s is %d bytes long, the bound is %d", r.kind, field, v, hi)
		return 0
	case v > uint64(len(r.b)-r.off-n):
		r.err = Invalid(ErrTooLarge, "%s %s claims %d bytes, only %d remain", r.kind, field, v, len(r.b)-r.off-n)
		return 0
	case v < uint64(lo):
		r.err = Invalid(ErrMalformed, "%s %s is %d bytes long, at least %d required", r.kind, field, v, lo)
		return 0
	}
	r.off += n
	return int(v)
}

// Bytes reads a uvarint length of lo to hi and that many bytes, which alias
// the payload (and cannot be appended to in place).
func (r *Reader) Bytes(field string, lo, hi int) []byte {
	p := r.Take(field, r.length(field, lo, hi))
	return p[:len(p):len(p)]
}

// String reads a length-prefixed string of lo to hi bytes.
func (r *Reader) String(field string, lo, hi int) string {
	return string(r.Bytes(field, lo, hi))
}

// Fail records err unless an earlier failure is already recorded.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Err returns the first failure so far, if any; unlike Finish, it does not
// look at unread bytes.
func (r *Reader) Err() error { return r.err }

// Remaining is the number of unread bytes.
func (r *Reader) Remaining() int { return len(r.b) - r.off }

// Finish returns the first failure, or an error matching ErrMalformed when
// bytes are left unread.
func (r *Reader) Finish() error {
	if r.err == nil && r.off != len(r.b) {
		r.err = Invalid(ErrMalformed, "%s payload has %d unexpected bytes at byte %d", r.kind, len(r.b)-r.off, r.where())
	}
	return r.err
}

// UvarintLen is the number of bytes of the minimal uvarint encoding of v.
func UvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
