package coder

import (
	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/recoverable"
)

const (
	commitKind = "commit token"
	// commitVersion is the version EncodeCommitToken writes and the newest one
	// DecodeCommitToken reads.
	commitVersion byte = 1
)

var (
	commitMagic   = [4]byte{'S', '3', 'O', 'C'}
	commitFraming = frame.Framing{Magic: commitMagic, Kind: commitKind}
)

// EncodeCommitToken returns the encoding of c in the newest version. Equal tokens
// give equal bytes, and every field round-trips exactly through DecodeCommitToken.
//
// It refuses, with an error matching recoverable.ErrInvalidToken and
// ErrTooLarge or ErrMalformed, a token that exceeds the format's bounds or that
// no stream can make (see FORMAT.md): what it writes, DecodeCommitToken can read. A
// token with no parts is accepted; whether it can be committed is the
// committer's business.
func EncodeCommitToken(c recoverable.CommitToken) ([]byte, error) {
	b, err := encodeCommit(c)
	return b, refused(err)
}

func encodeCommit(c recoverable.CommitToken) ([]byte, error) {
	if err := checkCommit(c); err != nil {
		return nil, err
	}
	hint := 64 + len(c.Bucket) + len(c.Key) + len(c.UploadID) + len(c.StagingPrefix)
	b, err := commitFraming.Begin(commitVersion, hint)
	if err != nil {
		return nil, err
	}
	b = appendString(b, c.Bucket)
	b = appendString(b, c.Key)
	b = appendString(b, c.UploadID)
	b = appendString(b, c.StagingPrefix)
	b = appendPartList(b, c.Parts)
	return commitFraming.End(b)
}

// DecodeCommitToken decodes a commit token written by EncodeCommitToken of this or any
// earlier release. The result does not alias b.
//
// Any other input gives an error matching recoverable.ErrInvalidToken and one
// of ErrBadMagic, ErrVersion (a *VersionError), ErrTruncated, ErrChecksum,
// ErrTooLarge or ErrMalformed; a returned token always satisfies the checks
// EncodeCommitToken makes.
func DecodeCommitToken(b []byte) (recoverable.CommitToken, error) {
	c, err := decodeCommit(b)
	return c, refused(err)
}

func decodeCommit(b []byte) (recoverable.CommitToken, error) {
	version, payload, err := commitFraming.Unframe(commitVersion, b)
	if err != nil {
		return recoverable.CommitToken{}, err
	}
	var c recoverable.CommitToken
	switch version {
	case 1:
		c, err = decodeCommitV1(payload)
	default:
		err = &VersionError{Kind: commitKind, Got: version, Max: commitVersion}
	}
	if err == nil {
		err = checkCommit(c)
	}
	if err != nil {
		return recoverable.CommitToken{}, err
	}
	return c, nil
}

func decodeCommitV1(payload []byte) (recoverable.CommitToken, error) {
	d := frame.NewReader(commitKind, payload)
	var c recoverable.CommitToken
	c.Bucket = d.String("Bucket", 1, MaxBucketLen)
	c.Key = d.String("Key", 1, MaxKeyLen)
	c.UploadID = d.String("UploadID", 1, MaxUploadIDLen)
	c.StagingPrefix = d.String("StagingPrefix", 0, MaxKeyLen)
	c.Parts = readPartList(d, "Parts")
	return c, d.Finish()
}

// checkCommit checks the bounds of the format and the invariants every commit
// token satisfies.
func checkCommit(c recoverable.CommitToken) error {
	if err := checkObjectID(commitKind, c.Bucket, c.Key, c.UploadID, c.StagingPrefix); err != nil {
		return err
	}
	return checkPartList(commitKind, c.Parts)
}
