// Package coder turns the recoverable package's tokens into versioned,
// self-checking bytes and back. It links no Beam package: the sink encodes a
// token with it before the token enters a checkpoint (inside the writer's
// restriction) or an element, so a runner only ever holds these bytes.
//
// A token written by any released version of this package must decode, in every
// later version, to exactly the value it was written from: a checkpoint may be
// restored long after the job that took it was upgraded. FORMAT.md describes the
// byte layout; testdata/ holds golden bytes of every version, which the tests
// decode and re-encode, so any change to the encoding fails loudly.
//
// Every encoding is framed the same way (FORMAT.md): a four-byte magic that
// names the kind of value, a version byte, the payload's length, the payload, and
// a CRC-32C over all of it. A damaged or cut-off checkpoint therefore gives an
// error instead of a token that resumes at the wrong offset.
//
// Decoders never panic, and never allocate more than the input they were given
// can justify. Each error they return matches recoverable.ErrInvalidToken and one
// of this package's sentinels (ErrBadMagic, ErrVersion, ErrTruncated,
// ErrChecksum, ErrTooLarge, ErrMalformed) under errors.Is.
//
// Encodings are canonical: equal tokens encode to equal bytes, and every byte
// string a decoder accepts is the encoding of the value it returns. The Beam
// coders are therefore deterministic.
package coder
