package recoverable_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/s3once/s3once/internal/s3test"
	"github.com/s3once/s3once/recoverable"
)

func TestSmoke(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	c := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	ctx := context.Background()
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: 5 << 20, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Open(ctx, b, "f", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), (12<<20)/16+1000)
	s.Write(data[:7<<20])
	rr, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("garbage"))
	s.Dispose(ctx)
	s2, err := w.Recover(ctx, rr)
	if err != nil {
		t.Fatal(err)
	}
	s2.Write(data[7<<20:])
	cr, err := s2.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := recoverable.VerifyParts(ctx, c, b, "f", cr.UploadID, cr.Parts)
	if err != nil {
		t.Fatal(err)
	}
	var cp []types.CompletedPart
	for _, p := range parts {
		cp = append(cp, types.CompletedPart{PartNumber: aws.Int32(p.Number), ETag: aws.String(p.ETag), ChecksumCRC64NVME: aws.String(recoverable.EncodeCRC(p.CRC))})
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: aws.String("f"), UploadId: &cr.UploadID, MultipartUpload: &types.CompletedMultipartUpload{Parts: cp}, ChecksumCRC64NVME: aws.String(recoverable.EncodeCRC(cr.CRC())), ChecksumType: types.ChecksumTypeFullObject, MpuObjectSize: aws.Int64(cr.Size())})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("f")})
	var got bytes.Buffer
	got.ReadFrom(out.Body)
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("mismatch %d vs %d", got.Len(), len(data))
	}
}
