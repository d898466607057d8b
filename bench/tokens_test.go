package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/benchkit"
	"github.com/s3once/s3once/recoverable"
)

// BenchmarkPersist measures one Persist of a stream that has uploaded 10,
// 1,000 and 10,000 parts and holds a 1 MiB tail, and the encoded size of the
// token it returns.
//
// Writing 10,000 real parts of 8 MiB would take 80 GB, so the parts are
// simulated: the stream is recovered from a token whose part list was built
// in memory, over a client that answers ListParts with those parts. Every
// other call, the upload and the side objects Persist writes included, goes to
// the real server. Persist itself never lists parts (ListParts/op shows it):
// it waits for the parts in flight and uploads the tail, whatever the count.
func BenchmarkPersist(b *testing.B) {
	const tail = 1 * MiB
	for _, parts := range []int{10, 1000, 10000} {
		b.Run("parts="+strconv.Itoa(parts), func(b *testing.B) {
			e := newEnv(b)
			ctx := context.Background()
			// Keys of one length, so the token sizes differ only by what the part
			// count changes.
			rr, c := simulatedUpload(b, e, fmt.Sprintf("persist/%05d", parts), parts)
			w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: partSize, Concurrency: concurrency})
			if err != nil {
				b.Fatal(err)
			}
			s, err := w.Recover(ctx, rr)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Dispose(ctx)
			if err := writeAll(s, benchkit.NewPattern(tail)); err != nil {
				b.Fatal(err)
			}
			c.listParts.Store(0)
			var tokenBytes, n int
			for b.Loop() {
				got, err := s.Persist(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				n++
				if got.Parts.Count != parts || got.Tail.Len != tail {
					b.Fatalf("token holds %d parts and a %d-byte tail, want %d and %d", got.Parts.Count, got.Tail.Len, parts, tail)
				}
				enc, err := coder.EncodeResumeToken(got)
				if err != nil {
					b.Fatal(err)
				}
				tokenBytes = len(enc)
				if err := w.Cleanup(ctx, got); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(tokenBytes), "token-B")
			b.ReportMetric(float64(c.listParts.Load())/float64(n), "ListParts/op")
		})
	}
}

// BenchmarkRecover measures Writer.Recover from a token of a stream that
// uploaded two parts and persisted a tail of 0 bytes, 1 MiB, and one byte
// short of a part, over a client that counts GetObject calls and the bytes
// they return: a recover downloads at most the one tail.
func BenchmarkRecover(b *testing.B) {
	tails := []struct {
		name string
		len  int64
	}{
		{"0", 0},
		{"1MiB", 1 * MiB},
		{"8MiB-1", partSize - 1},
	}
	for _, tail := range tails {
		b.Run("tail="+tail.name, func(b *testing.B) {
			e := newEnv(b)
			ctx := context.Background()
			c := &countingClient{Client: e.client}
			w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: partSize, Concurrency: concurrency})
			if err != nil {
				b.Fatal(err)
			}
			s, err := w.Open(ctx, e.bucket, "recover/"+tail.name, recoverable.ObjectOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if err := writeAll(s, benchkit.NewPattern(2*partSize+tail.len)); err != nil {
				b.Fatal(err)
			}
			rr, err := s.Persist(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Dispose(ctx); err != nil {
				b.Fatal(err)
			}
			c.getObject.Store(0)
			c.gotBytes.Store(0)
			n := 0
			for b.Loop() {
				r, err := w.Recover(ctx, rr)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				n++
				if r.Position() != rr.Size() {
					b.Fatalf("recovered at %d, token holds %d bytes", r.Position(), rr.Size())
				}
				if err := r.Dispose(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(rr.Tail.Len), "tail-B")
			b.ReportMetric(float64(c.getObject.Load())/float64(n), "GetObject/op")
			b.ReportMetric(float64(c.gotBytes.Load())/float64(n), "downloaded-B/op")
		})
	}
}

// simulatedUpload creates a real multipart upload at key and returns a token
// that says parts parts of partSize bytes were uploaded to it, with a client
// whose ListParts lists those parts.
func simulatedUpload(b *testing.B, e *env, key string, parts int) (recoverable.ResumeToken, *countingClient) {
	b.Helper()
	out, err := e.client.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{
		Bucket: aws.String(e.bucket), Key: aws.String(key),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumType: types.ChecksumTypeFullObject,
	})
	if err != nil {
		b.Fatal(err)
	}
	list := make([]recoverable.Part, parts)
	for i := range list {
		list[i] = recoverable.Part{
			Number: int32(i + 1),
			Size:   partSize,
			ETag:   fmt.Sprintf(`"%032x"`, uint64(i)*0x9e3779b97f4a7c15),
			CRC:    uint64(i+1) * 0xbf58476d1ce4e5b9,
		}
	}
	rr := recoverable.ResumeToken{
		Bucket: e.bucket, Key: key, UploadID: aws.ToString(out.UploadId),
		PartSize: partSize, StagingPrefix: recoverable.DefaultStagingPrefix, Seq: 1,
		Parts: recoverable.Chain(list),
	}
	return rr, &countingClient{Client: e.client, parts: list}
}

// countingClient counts calls and downloaded bytes; when parts is set, it
// answers ListParts with them instead of asking the server.
type countingClient struct {
	*s3.Client
	parts     []recoverable.Part
	getObject atomic.Int64
	gotBytes  atomic.Int64
	listParts atomic.Int64
}

func (c *countingClient) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.getObject.Add(1)
	out, err := c.Client.GetObject(ctx, in, opts...)
	if err == nil {
		out.Body = &countingBody{ReadCloser: out.Body, n: &c.gotBytes}
	}
	return out, err
}

func (c *countingClient) ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	c.listParts.Add(1)
	if c.parts == nil {
		return c.Client.ListParts(ctx, in, opts...)
	}
	const page = 1000
	from := 0
	if m := aws.ToString(in.PartNumberMarker); m != "" {
		v, err := strconv.Atoi(m)
		if err != nil {
			return nil, fmt.Errorf("stub ListParts: marker %q: %w", m, err)
		}
		from = v
	}
	to := min(from+page, len(c.parts))
	out := &s3.ListPartsOutput{
		Bucket: in.Bucket, Key: in.Key, UploadId: in.UploadId,
		IsTruncated: aws.Bool(to < len(c.parts)),
	}
	if to < len(c.parts) {
		out.NextPartNumberMarker = aws.String(strconv.Itoa(to))
	}
	for _, p := range c.parts[from:to] {
		out.Parts = append(out.Parts, types.Part{
			PartNumber: aws.Int32(p.Number), Size: aws.Int64(p.Size), ETag: aws.String(p.ETag),
			ChecksumCRC64NVME: aws.String(s3call.EncodeCRC(p.CRC)),
		})
	}
	return out, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r *countingBody) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}
