package coder

import (
	"encoding/binary"
	"math"

	"github.com/s3once/s3once/recoverable"
)

// Appending fields to a payload. Callers validate values first: these never fail.

func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// appendBytes appends a uvarint length and then p.
func appendBytes(b, p []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

// appendString appends a uvarint length and then s.
func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendPartList appends the fixed-size encoding of l, so a token's size never
// depends on the number of parts.
func appendPartList(b []byte, l recoverable.PartList) []byte {
	b = appendU32(b, uint32(l.Count))
	b = appendU64(b, uint64(l.Bytes))
	b = append(b, l.Digest[:]...)
	return appendU64(b, l.CRC)
}

// reader takes fields off a payload in order. The first failure sticks: later
// reads return zero values and err keeps the first error, so a decoder can read
// every field and check err once.
type reader struct {
	kind string // the kind of value, for messages
	b    []byte // the payload
	off  int    // the next unread byte of b
	err  error
}

// where is the position of the next unread byte, counted from the frame's first
// byte as FORMAT.md counts.
func (r *reader) where() int { return headerLen + r.off }

func (r *reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = invalid(ErrTruncated, "%s payload ends at byte %d inside %s, which needs %d bytes", r.kind, headerLen+len(r.b), field, n)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) u8(field string) byte {
	if p := r.take(field, 1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u32(field string) uint32 {
	if p := r.take(field, 4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64(field string) uint64 {
	if p := r.take(field, 8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// i64 reads a fixed-width size, which must not have its top bit set.
func (r *reader) i64(field string) int64 {
	v := r.u64(field)
	if v > math.MaxInt64 {
		r.fail(invalid(ErrMalformed, "%s %s is negative", r.kind, field))
		return 0
	}
	return int64(v)
}

// length reads a uvarint length of at least lo and at most hi, and no more
// than the unread bytes: nothing is allocated from a length that the input
// cannot back.
func (r *reader) length(field string, lo, hi int) int {
	if r.err != nil {
		return 0
	}
	at := r.where()
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.err = invalid(ErrTruncated, "%s payload ends inside the length of %s at byte %d", r.kind, field, at)
		return 0
	case n < 0:
		r.err = invalid(ErrTooLarge, "%s length of %s at byte %d overflows 64 bits", r.kind, field, at)
		return 0
	case n != uvarintLen(v):
		r.err = invalid(ErrMalformed, "%s length of %s at byte %d is not minimally encoded", r.kind, field, at)
		return 0
	case v > uint64(hi):
		r.err = invalid(ErrTooLarge, "%s %s is %d bytes long, the bound is %d", r.kind, field, v, hi)
		return 0
	case v > uint64(len(r.b)-r.off-n):
		r.err = invalid(ErrTooLarge, "%s %s claims %d bytes, only %d remain", r.kind, field, v, len(r.b)-r.off-n)
		return 0
	case v < uint64(lo):
		r.err = invalid(ErrMalformed, "%s %s is %d bytes long, at least %d required", r.kind, field, v, lo)
		return 0
	}
	r.off += n
	return int(v)
}

// str reads a length-prefixed string of lo to hi bytes.
func (r *reader) str(field string, lo, hi int) string {
	return string(r.take(field, r.length(field, lo, hi)))
}

// bytes reads a length-prefixed byte string of lo to hi bytes into a new
// slice; nil when it is empty.
func (r *reader) bytes(field string, lo, hi int) []byte {
	p := r.take(field, r.length(field, lo, hi))
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

func (r *reader) partList(field string) recoverable.PartList {
	var l recoverable.PartList
	count := r.u32(field + ".Count")
	if count > recoverable.MaxS3Parts {
		r.fail(invalid(ErrTooLarge, "%s %s.Count is %d, S3 allows %d parts", r.kind, field, count, recoverable.MaxS3Parts))
	}
	l.Count = int(count)
	l.Bytes = r.i64(field + ".Bytes")
	copy(l.Digest[:], r.take(field+".Digest", len(l.Digest)))
	l.CRC = r.u64(field + ".CRC")
	return l
}

// fail records err unless an earlier failure is already recorded.
func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// finish returns the first failure, or an error if bytes are left unread.
func (r *reader) finish() error {
	if r.err == nil && r.off != len(r.b) {
		r.err = invalid(ErrMalformed, "%s payload has %d unexpected bytes at byte %d", r.kind, len(r.b)-r.off, r.where())
	}
	return r.err
}

// uvarintLen is the number of bytes of the minimal uvarint encoding of v.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
