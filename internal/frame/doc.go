// Package frame is the framing and the field reader that s3once's binary
// encodings share: package coder's tokens, and the sink's batches and
// restrictions.
//
// A frame is a four-byte magic that names the kind of value, a version byte,
// the payload's length (four bytes, big-endian), the payload, and a CRC-32C
// (Castagnoli) over everything before it; coder/FORMAT.md gives the layout.
// A damaged or cut-off frame gives an error, never a shorter value.
//
// Every error this package returns matches exactly one of its sentinels
// under errors.Is, and nothing else: the package knows no kind of value.
// Each user says what a refused value is at its own boundary: package coder
// wraps the errors as recoverable.ErrInvalidToken (and re-exports the
// sentinels, with a VersionError of its own), the sink's batches and
// restrictions as malformed batches and restrictions.
package frame
