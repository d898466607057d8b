// Package frame is the framing and the field reader that s3once's binary
// encodings share: package coder's tokens, and the sink's batches and
// restrictions.
//
// A frame is a four-byte magic that names the kind of value, a version byte,
// the payload's length (four bytes, big-endian), the payload, and a CRC-32C
// (Castagnoli) over everything before it; coder/FORMAT.md gives the layout.
// A damaged or cut-off frame gives an error, never a shorter value.
//
// Every error this package returns matches recoverable.ErrInvalidToken and
// exactly one of its sentinels under errors.Is. Package coder re-exports the
// sentinels and VersionError for its callers.
package frame
