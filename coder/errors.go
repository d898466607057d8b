package coder

import "github.com/s3once/s3once/internal/frame"

// Sentinel errors, one for each way an encoded value can be refused. Every
// error a decoder returns matches recoverable.ErrInvalidToken and exactly one of
// these under errors.Is. Encoders refuse a token that breaks the format's bounds
// or a token's invariants with ErrTooLarge or ErrMalformed, so that what is
// written can always be read back.
var (
	// ErrBadMagic: the input does not start with the magic of the expected
	// kind of value (it is another kind, or not one of ours at all).
	ErrBadMagic = frame.ErrBadMagic
	// ErrVersion: the version byte names a version this build cannot read,
	// usually one written by a newer build. Errors that match it are
	// *VersionError values.
	ErrVersion = frame.ErrVersion
	// ErrTruncated: the input ends before the value it declares does.
	ErrTruncated = frame.ErrTruncated
	// ErrChecksum: the CRC-32C over the input does not match the stored one;
	// the bytes were altered after they were written.
	ErrChecksum = frame.ErrChecksum
	// ErrTooLarge: a length or a count exceeds the input that holds it or the
	// bound the format sets for it.
	ErrTooLarge = frame.ErrTooLarge
	// ErrMalformed: the bytes are intact but do not describe a valid value: an
	// unknown tag, a non-minimal varint, trailing bytes, or fields that break a
	// token's invariants (a negative size, a tail that is both inline and a
	// side object, parts without bytes, ...).
	ErrMalformed = frame.ErrMalformed
)

// VersionError reports a version byte this build cannot read: Kind names the
// kind of value, Got is the version found, and every version from 1 to Max is
// readable. It matches both ErrVersion and recoverable.ErrInvalidToken under
// errors.Is.
type VersionError = frame.VersionError

// invalid returns an error that matches recoverable.ErrInvalidToken and kind,
// with a message saying what was wrong.
func invalid(kind error, format string, args ...any) error {
	return frame.Invalid(kind, format, args...)
}
