package frame

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Frame layout; coder/FORMAT.md gives the details.
const (
	// HeaderLen is the number of bytes before the payload: magic, version,
	// payload length.
	HeaderLen = 4 + 1 + 4
	// TrailerLen is the number of bytes after the payload: its CRC-32C.
	TrailerLen = 4
	// Overhead is the number of bytes a frame adds to its payload.
	Overhead = HeaderLen + TrailerLen
	// MaxPayload is the payload bound of a Framing that sets none, in bytes.
	// Tokens live in runner checkpoints: the largest resume token is under
	// 70 KiB.
	MaxPayload = 1 << 20
	// MaxLength is the largest bound a Framing may have: the most the frame's
	// four-byte length field can say.
	MaxLength = 1<<32 - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Framing is the frame of one kind of value. Pick a magic no other kind
// uses, start at version 1, and never reuse a version number for a different
// payload layout.
//
// Begin and End write a frame around a payload the caller appends in place,
// so the payload is written once, into the frame, and never copied; Unframe
// returns the payload as a sub-slice of its input.
type Framing struct {
	Magic [4]byte
	// Kind names the kind of value in errors; "" names it by its magic.
	Kind string
	// MaxPayload bounds the payload, in bytes; 0 means MaxPayload. No bound
	// exceeds MaxLength.
	MaxPayload int64
}

func (f Framing) bound() int64 {
	if f.MaxPayload <= 0 {
		return MaxPayload
	}
	return min(f.MaxPayload, MaxLength)
}

func (f Framing) kind() string {
	if f.Kind != "" {
		return f.Kind
	}
	return fmt.Sprintf("%q frame", f.Magic[:])
}

// Begin starts a frame of the given version; capacity is room for the
// payload the caller is about to append (a hint: the slice grows as append
// needs). Append the payload to the result, then pass it to End. Begin
// refuses version 0 with an error matching ErrMalformed.
func (f Framing) Begin(version byte, capacity int) ([]byte, error) {
	if version == 0 {
		return nil, Invalid(ErrMalformed, "frame version 0 is reserved; versions start at 1")
	}
	capacity = int(min(max(int64(capacity), 0), f.bound()))
	b := make([]byte, HeaderLen, Overhead+capacity)
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
	if len(b) < HeaderLen || [4]byte(b[:4]) != f.Magic || b[4] == 0 {
		return nil, Invalid(ErrMalformed, "%s: End needs a frame begun by Begin", f.kind())
	}
	if n := int64(len(b) - HeaderLen); n > f.bound() {
		return nil, Invalid(ErrTooLarge, "%s: payload of %d bytes exceeds the bound of %d", f.kind(), n, f.bound())
	}
	binary.BigEndian.PutUint32(b[5:HeaderLen], uint32(len(b)-HeaderLen))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// Unframe checks one whole frame of f's magic and returns its version and
// its payload, which aliases b.
//
// It accepts exactly one whole frame whose version is between 1 and
// maxVersion; otherwise it returns an error matching one of ErrBadMagic (another magic),
// ErrTruncated (b ends before the frame does), ErrTooLarge (the declared
// length exceeds the bound), ErrChecksum (the CRC-32C does not match),
// ErrMalformed (bytes after the frame) or ErrVersion (a *VersionError). The
// checksum is checked before the version, so a damaged version byte is
// reported as damage, not as a version from the future.
func (f Framing) Unframe(maxVersion byte, b []byte) (version byte, payload []byte, err error) {
	kind, bound := f.kind(), f.bound()
	if len(b) >= len(f.Magic) && [4]byte(b[:4]) != f.Magic {
		return 0, nil, Invalid(ErrBadMagic, "%s must start with %q, found %q", kind, f.Magic[:], b[:4])
	}
	if len(b) < Overhead {
		return 0, nil, Invalid(ErrTruncated, "%s of %d bytes is shorter than the %d-byte frame", kind, len(b), Overhead)
	}
	n := binary.BigEndian.Uint32(b[5:HeaderLen])
	if int64(n) > bound {
		return 0, nil, Invalid(ErrTooLarge, "%s declares a payload of %d bytes, the bound is %d", kind, n, bound)
	}
	end := Overhead + int(n)
	if end > len(b) {
		return 0, nil, Invalid(ErrTruncated, "%s declares %d bytes but the input holds %d (cut off, or the length field is damaged)", kind, end, len(b))
	}
	want := binary.BigEndian.Uint32(b[end-TrailerLen : end])
	if got := crc32.Checksum(b[:end-TrailerLen], castagnoli); got != want {
		return 0, nil, Invalid(ErrChecksum, "%s CRC-32C is %08x, stored %08x (the bytes were altered)", kind, got, want)
	}
	if end < len(b) {
		return 0, nil, Invalid(ErrMalformed, "%s is followed by %d unexpected bytes", kind, len(b)-end)
	}
	v := b[4]
	if v == 0 || v > maxVersion {
		return 0, nil, &VersionError{Kind: kind, Got: v, Max: maxVersion}
	}
	return v, b[HeaderLen : end-TrailerLen], nil
}
