package s3test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// fullObjectUpload starts a multipart upload with a full-object CRC64NVME,
// as the writer does.
func fullObjectUpload(t *testing.T, c *s3.Client, bucket, key string, sse types.ServerSideEncryption) string {
	t.Helper()
	in := &s3.CreateMultipartUploadInput{
		Bucket: aws.String(bucket), Key: aws.String(key),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumType: types.ChecksumTypeFullObject,
	}
	if sse != "" {
		in.ServerSideEncryption = sse
	}
	out, err := c.CreateMultipartUpload(context.Background(), in)
	if err != nil {
		t.Fatalf("create upload: %v", err)
	}
	return aws.ToString(out.UploadId)
}

func uploadPart(t *testing.T, c *s3.Client, bucket, key, id string, n int32, body []byte) *s3.UploadPartOutput {
	t.Helper()
	out, err := c.UploadPart(context.Background(), &s3.UploadPartInput{
		Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(id), PartNumber: aws.Int32(n),
		Body: bytes.NewReader(body), ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme,
	})
	if err != nil {
		t.Fatalf("upload part %d: %v", n, err)
	}
	return out
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestMinIOBehaviour records, as checks that fail when either server
// changes, how MinIO and versitygw answer the calls s3once depends on (see
// the package doc).
func TestMinIOBehaviour(t *testing.T) {
	for _, k := range []Kind{MinIO, Versitygw} {
		t.Run(string(k), func(t *testing.T) { serverBehaviour(t, k) })
	}
}

func serverBehaviour(t *testing.T, kind Kind) {
	srv := Start(t, Options{Kind: kind})
	c := srv.Client(ClientOptions{})
	bucket := srv.Bucket(t)
	ctx := context.Background()
	part := bytes.Repeat([]byte("s3once"), 1<<20) // 6 MiB

	// Conditional complete: If-None-Match on an existing key is a 412.
	id := fullObjectUpload(t, c, bucket, "k", "")
	p := uploadPart(t, c, bucket, "k", id, 1, part)
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(bucket), Key: aws.String("k"), UploadId: aws.String(id)})
	if err != nil || len(lp.Parts) != 1 {
		t.Fatalf("list parts: %v", err)
	}
	t.Logf("ListParts: part checksum CRC64NVME %q (UploadPart said %q), ETag %s", aws.ToString(lp.Parts[0].ChecksumCRC64NVME), aws.ToString(p.ChecksumCRC64NVME), aws.ToString(lp.Parts[0].ETag))
	if aws.ToString(lp.Parts[0].ChecksumCRC64NVME) == "" {
		t.Errorf("%s lists no part checksum", kind)
	}
	done := types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p.ETag, ChecksumCRC64NVME: p.ChecksumCRC64NVME}}}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(bucket), Key: aws.String("k"), UploadId: aws.String(id), MultipartUpload: &done,
		ChecksumType: types.ChecksumTypeFullObject, IfNoneMatch: aws.String("*"),
	}); err != nil {
		t.Fatalf("first complete: %v", err)
	}
	id2 := fullObjectUpload(t, c, bucket, "k", "")
	p2 := uploadPart(t, c, bucket, "k", id2, 1, part)
	done2 := types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p2.ETag, ChecksumCRC64NVME: p2.ChecksumCRC64NVME}}}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(bucket), Key: aws.String("k"), UploadId: aws.String(id2), MultipartUpload: &done2,
		ChecksumType: types.ChecksumTypeFullObject, IfNoneMatch: aws.String("*"),
	})
	t.Logf("complete over an existing key with If-None-Match: %v", err)
	if apiCode(err) != "PreconditionFailed" {
		t.Errorf("conditional complete over an existing key: %v; want PreconditionFailed", err)
	}
	// Aborting the upload that was just completed.
	_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("k"), UploadId: aws.String(id)})
	t.Logf("abort of a completed upload: %v", err)
	switch {
	case kind == MinIO && err != nil:
		t.Errorf("MinIO now refuses to abort a completed upload (%v); update the package doc", err)
	case kind == Versitygw && apiCode(err) != "NoSuchUpload":
		t.Errorf("versitygw: abort of a completed upload: %v; want NoSuchUpload", err)
	}
	// Listing uploads under a folder prefix.
	fullObjectUpload(t, c, bucket, "dir/a", "")
	lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String("dir/")})
	if err != nil {
		t.Fatal(err)
	}
	all, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	exact, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String("dir/a")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uploads listed under dir/: %d, with no prefix: %d, under dir/a: %d", len(lu.Uploads), len(all.Uploads), len(exact.Uploads))
	want := 1 // versitygw, as AWS
	if kind == MinIO {
		want = 0 // MinIO matches a prefix only as a whole key
	}
	if len(lu.Uploads) != want || len(exact.Uploads) != 1 || len(all.Uploads) != 2 {
		t.Errorf("%s lists %d uploads under dir/ (want %d), %d under dir/a (want 1), %d in all (want 2); update the package doc", kind, len(lu.Uploads), want, len(exact.Uploads), len(all.Uploads))
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("HEAD: CRC64NVME %q, type %s, ETag %s", aws.ToString(head.ChecksumCRC64NVME), head.ChecksumType, aws.ToString(head.ETag))

	// One empty part with the full-object CRC64NVME of zero bytes.
	id3 := fullObjectUpload(t, c, bucket, "empty", "")
	p3 := uploadPart(t, c, bucket, "empty", id3, 1, nil)
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(bucket), Key: aws.String("empty"), UploadId: aws.String(id3),
		MultipartUpload:   &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p3.ETag, ChecksumCRC64NVME: p3.ChecksumCRC64NVME}}},
		ChecksumCRC64NVME: aws.String("AAAAAAAAAAA="), ChecksumType: types.ChecksumTypeFullObject, MpuObjectSize: aws.Int64(0),
		IfNoneMatch: aws.String("*"),
	})
	t.Logf("empty part %q, complete with the zero-byte full-object CRC: %v", aws.ToString(p3.ChecksumCRC64NVME), err)
	switch {
	case kind == MinIO && apiCode(err) != "XAmzContentChecksumMismatch":
		t.Errorf("MinIO now takes (or refuses otherwise) the empty file's full-object CRC: %v; update the package doc", err)
	case kind == Versitygw && err != nil:
		t.Errorf("versitygw refuses the empty file's full-object CRC: %v; update the package doc", err)
	}
	if err != nil {
		_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: aws.String(bucket), Key: aws.String("empty"), UploadId: aws.String(id3),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p3.ETag, ChecksumCRC64NVME: p3.ChecksumCRC64NVME}}},
			ChecksumType:    types.ChecksumTypeFullObject, IfNoneMatch: aws.String("*"),
		})
		if err != nil {
			t.Errorf("the same without the full-object CRC: %v; want success", err)
		}
	}
}

// TestMinIOKMSETags: with a static KMS key and SSE-KMS, are part ETags MD5s
// of the part's bytes?
func TestMinIOKMSETags(t *testing.T) {
	key := "s3once-test-key:" + "dGhpcnR5LXR3by1ieXRlLWtleS1mb3ItczNvbmNlISE=" // 32 bytes
	srv := Start(t, Options{Kind: MinIO, KMSSecretKey: key})
	c := srv.Client(ClientOptions{})
	bucket := srv.Bucket(t)
	part := bytes.Repeat([]byte("kms!"), 5<<18) // 5 MiB
	sum := md5.Sum(part)
	md5hex := hex.EncodeToString(sum[:])
	id := fullObjectUpload(t, c, bucket, "k", types.ServerSideEncryptionAwsKms)
	a := strings.Trim(aws.ToString(uploadPart(t, c, bucket, "k", id, 1, part).ETag), `"`)
	b := strings.Trim(aws.ToString(uploadPart(t, c, bucket, "k", id, 1, part).ETag), `"`)
	t.Logf("SSE-KMS part ETags %s, %s; MD5 %s", a, b, md5hex)
	if a == md5hex || b == md5hex {
		t.Errorf("MinIO with SSE-KMS gives MD5 part ETags")
	}
	if a == b {
		t.Errorf("the same bytes uploaded again kept their ETag %s; want a new one, as on AWS with SSE-KMS", a)
	}
}
