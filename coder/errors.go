package coder

import (
	"errors"
	"fmt"

	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/recoverable"
)

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

// VersionError reports a version byte this build cannot read. It matches
// both ErrVersion and recoverable.ErrInvalidToken under errors.Is.
type VersionError struct {
	// Kind names the kind of token, such as "resume token".
	Kind string
	// Got is the version found in the input.
	Got byte
	// Max is the newest version this build reads; every version from 1 to
	// Max is readable.
	Max byte
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s: %s", recoverable.ErrInvalidToken, &frame.VersionError{Kind: e.Kind, Got: e.Got, Max: e.Max})
}

// Unwrap lets errors.Is match ErrVersion and recoverable.ErrInvalidToken.
func (e *VersionError) Unwrap() []error {
	return []error{recoverable.ErrInvalidToken, ErrVersion}
}

// invalid returns an error that matches kind, with a message saying what was
// wrong; refused makes it a token's refusal.
func invalid(kind error, format string, args ...any) error {
	return frame.Invalid(kind, format, args...)
}

// refused is the boundary of the package's exported functions: it makes an
// error of the framing, the field reader or the checks one that matches
// recoverable.ErrInvalidToken beside its sentinel, and a version the frame
// refused a *VersionError. Nil stays nil.
func refused(err error) error {
	if err == nil {
		return nil
	}
	var fv *frame.VersionError
	if errors.As(err, &fv) {
		return &VersionError{Kind: fv.Kind, Got: fv.Got, Max: fv.Max}
	}
	var cv *VersionError
	if errors.As(err, &cv) {
		return err
	}
	return fmt.Errorf("%w: %w", recoverable.ErrInvalidToken, err)
}
