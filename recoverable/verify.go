package recoverable

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
)

// PartLister lists the parts of a multipart upload.
type PartLister interface {
	ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error)
}

// VerifyParts lists parts 1..want.Count of the upload and checks them against
// want: parts numbered 1..Count without a gap, holding want.Bytes in all, and
// the same bytes. Where the server lists every part's CRC64NVME, the bytes are
// checked by the checksums alone: the listed parts' checksums, chained in part
// order, must give want.CRC. ETags are then not compared, since they name one
// upload of a part rather than its bytes wherever the bucket encrypts with
// SSE-KMS: a part uploaded again with the same bytes (a zombie replaying the
// same records, a stalled upload landing late) has another ETag and the same
// content. Only where the server lists no part checksums does the chain of
// ETags in want.Digest stand for the bytes.
//
// It returns the parts, in order, with the ETags just listed, ready for
// CompleteMultipartUpload. Parts numbered above want.Count are ignored: they
// belong to writes after the token was taken, or to a zombie writer.
//
// Errors wrap ErrNoSuchUpload or ErrPartsChanged in an *Error.
func VerifyParts(ctx context.Context, api PartLister, bucket, key, uploadID string, want PartList) ([]Part, error) {
	return verifyParts(ctx, api, s3call.Policy{}, bucket, key, uploadID, want)
}

// verifyParts is VerifyParts with each page of the listing under p.
func verifyParts(ctx context.Context, api PartLister, p s3call.Policy, bucket, key, uploadID string, want PartList) ([]Part, error) {
	fail := func(err error, hint string) error {
		return &Error{Op: "verify parts", Bucket: bucket, Key: key, UploadID: uploadID, Hint: hint, Err: err}
	}
	parts := make([]Part, 0, min(want.Count, 1000))
	allCRC := true
	var gap error
	in := &s3.ListPartsInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(uploadID)}
	err := s3call.ListParts(ctx, api, p, in, func(out *s3.ListPartsOutput) (bool, error) {
		for _, p := range out.Parts {
			n := aws.ToInt32(p.PartNumber)
			if int(n) > want.Count {
				return false, nil
			}
			if int(n) != len(parts)+1 {
				gap = fmt.Errorf("%w: part %d missing (server listed part %d next)", ErrPartsChanged, len(parts)+1, n)
				return false, nil
			}
			part := Part{Number: n, Size: aws.ToInt64(p.Size), ETag: aws.ToString(p.ETag)}
			if c, ok := s3call.DecodeCRC(aws.ToString(p.ChecksumCRC64NVME)); ok {
				part.CRC = c
			} else {
				allCRC = false
			}
			parts = append(parts, part)
		}
		return len(out.Parts) > 0, nil
	})
	switch {
	case s3call.IsNoSuchUpload(err):
		return nil, fail(fmt.Errorf("%w: %w", ErrNoSuchUpload, err), hintUploadGone)
	case err != nil:
		return nil, fail(fmt.Errorf("list parts: %w", err), "")
	case gap != nil:
		return nil, fail(gap, hintParts)
	}
	if len(parts) != want.Count {
		return nil, fail(fmt.Errorf("%w: upload has %d of the token's %d parts", ErrPartsChanged, len(parts), want.Count), hintParts)
	}
	if err := sameParts(parts, want, allCRC); err != nil {
		return nil, fail(err, hintParts)
	}
	if !allCRC {
		// Without listed checksums the token's own are the only ones there are.
		for i := range parts {
			parts[i].CRC = 0
		}
	}
	return parts, nil
}

// sameParts tells whether the listed parts 1..want.Count hold the bytes want
// describes: by their sizes and, with listed checksums, their CRC64NVME
// chained in order (which changes whenever any one part's does), else by the
// chain of their ETags.
func sameParts(parts []Part, want PartList, listedCRC bool) error {
	got := Chain(parts)
	if got.Bytes != want.Bytes {
		return fmt.Errorf("%w: parts hold %d bytes, token says %d", ErrPartsChanged, got.Bytes, want.Bytes)
	}
	if listedCRC {
		if got.CRC != want.CRC {
			return fmt.Errorf("%w: parts' CRC64NVME %016x, token says %016x", ErrPartsChanged, got.CRC, want.CRC)
		}
		return nil
	}
	if got.Digest != want.Digest {
		return fmt.Errorf("%w: part sizes or ETags differ from the token, and the server lists no part checksums to compare the bytes by", ErrPartsChanged)
	}
	return nil
}
