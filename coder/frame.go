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
	if len(b) >= len(magic) && [4]byte(b[:4]) != magic {
		return 0, nil, invalid(ErrBadMagic, "%s must start with %q, found %q", kind, magic[:], b[:4])
	}
	if len(b) < Overhead {
		return 0, nil, invalid(ErrTruncated, "%s of %d bytes is shorter than the %d-byte frame", kind, len(b), Overhead)
	}
	n := binary.BigEndian.Uint32(b[5:headerLen])
	if n > MaxPayload {
		return 0, nil, invalid(ErrTooLarge, "%s declares a payload of %d bytes, the bound is %d", kind, n, MaxPayload)
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
