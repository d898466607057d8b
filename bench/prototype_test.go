package bench

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/s3test"
	"github.com/s3once/s3once/recoverable"
)

// payloadHashes records the x-amz-content-sha256 header of every PUT.
type payloadHashes struct {
	mu   sync.Mutex
	seen []string
}

func (p *payloadHashes) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut {
		p.mu.Lock()
		p.seen = append(p.seen, r.Header.Get("X-Amz-Content-Sha256"))
		p.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestUnsignedPrototype checks the premise of the stream-unsigned side of
// BenchmarkUpload: its parts go out as UNSIGNED-PAYLOAD, and the server still
// refuses a part whose CRC64NVME header does not match the body.
func TestUnsignedPrototype(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	hashes := &payloadHashes{}
	c := &benchClient{Client: srv.Client(s3test.ClientOptions{HTTPClient: &http.Client{Transport: hashes}}), unsigned: true}
	bucket := srv.Bucket(t)
	ctx := context.Background()
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(bucket), Key: aws.String("k"),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumType: types.ChecksumTypeFullObject,
	})
	if err != nil {
		t.Fatal(err)
	}
	body := Fill(make([]byte, 1<<20))
	put := func(crc uint64) error {
		_, err := c.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String(bucket), Key: aws.String("k"), UploadId: up.UploadId, PartNumber: aws.Int32(1),
			Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumCRC64NVME: aws.String(recoverable.EncodeCRC(crc)),
		})
		return err
	}
	if err := put(recoverable.CRC64(body)); err != nil {
		t.Fatalf("part with the right CRC64NVME: %v", err)
	}
	if err := put(recoverable.CRC64(body) ^ 1); err == nil {
		t.Fatal("the server took a part whose CRC64NVME does not match its body")
	}
	hashes.mu.Lock()
	defer hashes.mu.Unlock()
	for _, h := range hashes.seen {
		if h != "UNSIGNED-PAYLOAD" {
			t.Fatalf("x-amz-content-sha256 %q, want UNSIGNED-PAYLOAD", h)
		}
	}
	if len(hashes.seen) != 2 {
		t.Fatalf("%d PUTs seen, want 2", len(hashes.seen))
	}
}
