package s3call

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// CompletedPart is one part to name in a completion.
type CompletedPart struct {
	Number int32
	ETag   string
	// CRC is the part's CRC64NVME; sent only with checksums on.
	CRC uint64
}

// Completion describes a CompleteMultipartUpload: the upload, exactly the
// parts to assemble, and what the server is to check.
type Completion struct {
	Bucket, Key, UploadID string
	Parts                 []CompletedPart
	// Size is the object's size in bytes, sent as the expected size.
	Size int64
	// CRC is the object's full-object CRC64NVME.
	CRC uint64
	// Checksums sends every part's CRC64NVME and, for a non-empty object,
	// the object's (a FULL_OBJECT checksum).
	Checksums bool
	// IfNoneMatch makes the completion conditional (If-None-Match: *): the
	// server refuses it when the key holds an object.
	IfNoneMatch bool
}

// CompleteInput builds the request of a completion.
func CompleteInput(c Completion) *s3.CompleteMultipartUploadInput {
	cp := make([]types.CompletedPart, len(c.Parts))
	for i, p := range c.Parts {
		cp[i] = types.CompletedPart{PartNumber: aws.Int32(p.Number), ETag: aws.String(p.ETag)}
		if c.Checksums {
			cp[i].ChecksumCRC64NVME = aws.String(EncodeCRC(p.CRC))
		}
	}
	in := &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(c.Bucket), Key: aws.String(c.Key), UploadId: aws.String(c.UploadID),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: cp},
		MpuObjectSize:   aws.Int64(c.Size),
	}
	// An empty object's full-object CRC64NVME is zero and says nothing the
	// size does not; MinIO refuses it (400 XAmzContentChecksumMismatch), so
	// it is left out.
	if c.Checksums && c.Size > 0 {
		in.ChecksumCRC64NVME = aws.String(EncodeCRC(c.CRC))
		in.ChecksumType = types.ChecksumTypeFullObject
	}
	if c.IfNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	return in
}
