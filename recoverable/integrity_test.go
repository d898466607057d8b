package recoverable_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/streamtest"
	"github.com/s3once/s3once/recoverable"
)

// corrupting flips one byte of every body on its way to the server, leaving
// the checksum header as the stream computed it: what a faulty NIC or proxy
// would do.
type corrupting struct{ *s3.Client }

func flip(body io.Reader) (io.ReadSeeker, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	if len(b) > 0 {
		b[len(b)/2] ^= 0x01
	}
	return bytes.NewReader(b), nil
}

func (c corrupting) UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	cp := *in
	body, err := flip(in.Body)
	if err != nil {
		return nil, err
	}
	cp.Body = body
	return c.Client.UploadPart(ctx, &cp, opts...)
}

func (c corrupting) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	cp := *in
	body, err := flip(in.Body)
	if err != nil {
		return nil, err
	}
	cp.Body = body
	return c.Client.PutObject(ctx, &cp, opts...)
}

// TestCorruptedBodiesRefused: bodies are sent without a SHA-256 in the
// signature (see Stream.bodyOptions), so the CRC64NVME header is what protects
// them: a part or a side object altered in transit is refused by the server,
// and the stream reports it.
func TestCorruptedBodiesRefused(t *testing.T) {
	c := corrupting{server.Client(s3test.ClientOptions{})}
	bucket := server.Bucket(t)
	ctx := context.Background()
	w, _ := recoverable.NewWriter(c, recoverable.Options{PartSize: streamtest.PartSize, InlineTailMax: -1})

	s, err := w.Open(ctx, bucket, "part", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Write(streamtest.Data(70, streamtest.PartSize+1))
	if _, err := s.Persist(ctx); err == nil || s3call.APICode(err) != "BadDigest" {
		t.Fatalf("persist over a corrupted part: %v, want the server's BadDigest", err)
	}
	_ = s.Dispose(ctx)

	s2 := streamtest.Open(t, w, bucket, "side")
	s2.Write(streamtest.Data(71, 100_000)) // a tail only: the side object
	_, err = s2.Persist(ctx)
	var e *recoverable.Error
	if s3call.APICode(err) != "BadDigest" || !errors.As(err, &e) {
		t.Fatalf("persist over a corrupted side object: %v, want a typed BadDigest", err)
	}
	_ = s2.Dispose(ctx)
}
