package frame

import (
	"errors"
	"fmt"
)

// Sentinel errors, one for each way an encoded value can be refused.
var (
	// ErrBadMagic: the input does not start with the magic of the expected
	// kind of value (it is another kind, or not one of ours at all).
	ErrBadMagic = errors.New("bad magic")
	// ErrVersion: the version byte names a version this build cannot read,
	// usually one written by a newer build. Errors that match it are
	// *VersionError values.
	ErrVersion = errors.New("unsupported version")
	// ErrTruncated: the input ends before the value it declares does.
	ErrTruncated = errors.New("truncated")
	// ErrChecksum: the CRC-32C over the input does not match the stored one;
	// the bytes were altered after they were written.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrTooLarge: a length or a count exceeds the input that holds it or the
	// bound the format sets for it.
	ErrTooLarge = errors.New("field too large")
	// ErrMalformed: the bytes are intact but do not describe a valid value: an
	// unknown tag, a non-minimal varint, trailing bytes, or fields that break a
	// value's invariants.
	ErrMalformed = errors.New("malformed")
)

// VersionError reports a version byte this build cannot read. It matches
// ErrVersion under errors.Is.
type VersionError struct {
	// Kind names the kind of value, such as "resume token".
	Kind string
	// Got is the version found in the input.
	Got byte
	// Max is the newest version this build reads; every version from 1 to Max
	// is readable.
	Max byte
}

func (e *VersionError) Error() string {
	if e.Got > e.Max {
		return fmt.Sprintf("%s: %s version %d is newer than this build reads (versions 1 to %d); decode it with a newer build of s3once",
			ErrVersion, e.Kind, e.Got, e.Max)
	}
	return fmt.Sprintf("%s: %s version %d was never written (this build reads versions 1 to %d)",
		ErrVersion, e.Kind, e.Got, e.Max)
}

// Unwrap lets errors.Is match ErrVersion.
func (e *VersionError) Unwrap() error { return ErrVersion }

// Invalid returns an error that matches sentinel, with a message saying
// what was wrong.
func Invalid(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
