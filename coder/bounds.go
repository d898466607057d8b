package coder

import (
	"github.com/s3once/s3once/recoverable"
)

// Bounds on a token's fields. Encoders refuse values outside them and decoders
// reject bytes that declare them. They may be relaxed in a later version
// (a decoder that accepts more still reads every token written before), never
// tightened.
const (
	// MaxBucketLen is the longest bucket name: 63 bytes under today's S3
	// naming rules, but buckets made in us-east-1 before 2018 may have up to
	// 255.
	MaxBucketLen = 255
	// MaxKeyLen is the longest object key S3 accepts, in bytes. It bounds Key,
	// StagingPrefix and the tail's side-object key.
	MaxKeyLen = 1024
	// MaxUploadIDLen is the longest multipart upload ID accepted. S3 does not
	// document a limit; its IDs are a few hundred bytes at most.
	MaxUploadIDLen = 1024
	// MaxInlineTail is the longest tail that may ride inside a resume token,
	// in bytes (the recoverable package allows InlineTailMax up to 64 KiB).
	MaxInlineTail = 64 << 10
)

// checkString reports a string field outside [lo, hi] bytes.
func checkString(kind, field, s string, lo, hi int) error {
	switch {
	case len(s) > hi:
		return invalid(ErrTooLarge, "%s %s is %d bytes long, the bound is %d", kind, field, len(s), hi)
	case len(s) < lo:
		return invalid(ErrMalformed, "%s %s is %d bytes long, at least %d required", kind, field, len(s), lo)
	}
	return nil
}

// checkObjectID checks the fields that name a token's upload.
func checkObjectID(kind, bucket, key, uploadID, stagingPrefix string) error {
	if err := checkString(kind, "Bucket", bucket, 1, MaxBucketLen); err != nil {
		return err
	}
	if err := checkString(kind, "Key", key, 1, MaxKeyLen); err != nil {
		return err
	}
	if err := checkString(kind, "UploadID", uploadID, 1, MaxUploadIDLen); err != nil {
		return err
	}
	return checkString(kind, "StagingPrefix", stagingPrefix, 0, MaxKeyLen)
}

// checkPartList checks what every PartList satisfies: 0 to 10,000 parts, of
// at most 5 GiB each, and the zero value when there are no parts (Chain of no
// parts).
func checkPartList(kind string, l recoverable.PartList) error {
	switch {
	case l.Count < 0:
		return invalid(ErrMalformed, "%s Parts.Count %d is negative", kind, l.Count)
	case l.Count > recoverable.MaxS3Parts:
		return invalid(ErrTooLarge, "%s Parts.Count is %d, S3 allows %d parts", kind, l.Count, recoverable.MaxS3Parts)
	case l.Bytes < 0:
		return invalid(ErrMalformed, "%s Parts.Bytes %d is negative", kind, l.Bytes)
	case l.Bytes > int64(l.Count)*recoverable.MaxPartSize:
		return invalid(ErrMalformed, "%s Parts.Bytes %d cannot fit in %d parts of at most %d bytes", kind, l.Bytes, l.Count, int64(recoverable.MaxPartSize))
	case l.Count == 0 && (l.CRC != 0 || l.Digest != [32]byte{}):
		return invalid(ErrMalformed, "%s has no parts but a non-zero Parts.CRC or Parts.Digest", kind)
	}
	return nil
}
