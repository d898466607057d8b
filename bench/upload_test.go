package bench

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/internal/streamtest"
	"github.com/s3once/s3once/recoverable"
)

// uploadSides are the ways BenchmarkUpload writes the same bytes to one new
// object, from the creation of the upload to its completion.
var uploadSides = []struct {
	name string
	run  func(u *uploadBench, ctx context.Context, key string, size int64) error
}{
	// The recoverable stream, fed Write calls of 256 KiB, closed for commit
	// and completed with exactly its parts (ListParts, then Complete with the
	// full-object CRC64NVME and If-None-Match), from a Writer that has
	// written a file before (its part buffers pooled, as the ceiling's are
	// allocated in advance).
	{"stream", (*uploadBench).stream},
	// The SDK's manager.Uploader reading the same bytes from an io.Reader,
	// with its defaults otherwise (a CRC32 per part).
	{"uploader", (*uploadBench).uploader},
	// The same uploader told to send a CRC64NVME per part (the SDK computes
	// it), the checksum the stream sends: the same hashing on both sides.
	{"uploader-crc64", (*uploadBench).uploaderCRC64},
	// The ceiling: concurrent UploadPart calls of buffers filled and
	// checksummed in advance, with the requests the stream sends (a
	// CRC64NVME header, the body UNSIGNED-PAYLOAD), and the same Complete;
	// no copying, no checksumming, no bookkeeping.
	{"ceiling", (*uploadBench).ceiling},
}

type uploadBench struct {
	env     *env
	client  *benchClient
	writer  *recoverable.Writer
	up      *manager.Uploader
	bufs    [][]byte // the ceiling's part buffers
	partCRC uint64
}

// BenchmarkUpload writes one object of each size per operation, through each
// side. Throughput is MB/s; B/MiB is the heap allocated per MiB written.
func BenchmarkUpload(b *testing.B) {
	for _, size := range []int64{64 * MiB, 256 * MiB, 1 * GiB} {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			for _, side := range uploadSides {
				b.Run("side="+side.name, func(b *testing.B) {
					u := newUploadBench(b)
					ctx := context.Background()
					b.SetBytes(size)
					var alloc allocMeter
					n := 0
					for b.Loop() {
						key := fmt.Sprintf("upload/%s/%s/%d", sizeName(size), side.name, n)
						n++
						b.StopTimer()
						alloc.start()
						b.StartTimer()
						if err := side.run(u, ctx, key, size); err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						alloc.stop()
						u.env.checkSize(b, key, size)
						u.env.deleteKey(b, key)
						b.StartTimer()
					}
					b.ReportMetric(alloc.perMiB(n, size), "B/MiB")
					complete := time.Duration(u.client.completeNs.Load())
					b.ReportMetric(float64(complete.Microseconds())/1000/float64(n), "complete-ms/op")
				})
			}
		})
	}
}

func newUploadBench(b *testing.B) *uploadBench {
	e := newEnv(b)
	c := &benchClient{Client: e.client}
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: partSize, Concurrency: concurrency})
	if err != nil {
		b.Fatal(err)
	}
	up := manager.NewUploader(c, func(u *manager.Uploader) {
		u.PartSize = partSize
		u.Concurrency = concurrency
	})
	u := &uploadBench{env: e, client: c, writer: w, up: up}
	for range concurrency {
		u.bufs = append(u.bufs, Fill(make([]byte, partSize)))
	}
	// The ceiling's buffers are allocated and touched before the timing; so
	// are the stream's: one file of Concurrency+1 parts, written outside the
	// timing, leaves the writer's pool holding its part buffers, as in a
	// worker after its first file.
	warm := fmt.Sprintf("upload/warm-up-%d", time.Now().UnixNano())
	if err := writeStream(context.Background(), w, c, e.bucket, warm, (concurrency+1)*partSize); err != nil {
		b.Fatal(err)
	}
	e.deleteKey(b, warm)
	u.partCRC = recoverable.CRC64(u.bufs[0]) // every part holds the same bytes
	return u
}

func (u *uploadBench) stream(ctx context.Context, key string, size int64) error {
	return writeStream(ctx, u.writer, u.client, u.env.bucket, key, size)
}

// writeStream writes size bytes of the pattern to a new stream and commits it.
func writeStream(ctx context.Context, w *recoverable.Writer, c streamtest.Backend, bucket, key string, size int64) error {
	s, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		return err
	}
	defer s.Dispose(ctx)
	if err := writeAll(s, NewPattern(size)); err != nil {
		return err
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		return err
	}
	return streamtest.Complete(ctx, c, cr)
}

func (u *uploadBench) uploader(ctx context.Context, key string, size int64) error {
	_, err := u.up.Upload(ctx, &s3.PutObjectInput{
		Bucket: aws.String(u.env.bucket), Key: aws.String(key), Body: NewPattern(size),
	})
	return err
}

func (u *uploadBench) uploaderCRC64(ctx context.Context, key string, size int64) error {
	_, err := u.up.Upload(ctx, &s3.PutObjectInput{
		Bucket: aws.String(u.env.bucket), Key: aws.String(key), Body: NewPattern(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme,
	})
	return err
}

func (u *uploadBench) ceiling(ctx context.Context, key string, size int64) error {
	if size%partSize != 0 {
		return fmt.Errorf("ceiling: size %d is not a multiple of the part size", size)
	}
	c := u.client
	bucket := aws.String(u.env.bucket)
	out, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: bucket, Key: aws.String(key),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumType: types.ChecksumTypeFullObject,
	})
	if err != nil {
		return err
	}
	n := int(size / partSize)
	parts := make([]types.CompletedPart, n)
	crc := aws.String(recoverable.EncodeCRC(u.partCRC))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i := range n {
		g.Go(func() error {
			buf := u.bufs[i%len(u.bufs)]
			num := aws.Int32(int32(i + 1))
			p, err := c.UploadPart(gctx, &s3.UploadPartInput{
				Bucket: bucket, Key: aws.String(key), UploadId: out.UploadId, PartNumber: num,
				Body: bytes.NewReader(buf), ContentLength: aws.Int64(partSize),
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumCRC64NVME: crc,
			}, unsignedBody)
			if err != nil {
				return err
			}
			parts[i] = types.CompletedPart{PartNumber: num, ETag: p.ETag, ChecksumCRC64NVME: crc}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var whole uint64
	for range n {
		whole = recoverable.CRC64Combine(whole, u.partCRC, partSize)
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: bucket, Key: aws.String(key), UploadId: out.UploadId,
		MultipartUpload:   &types.CompletedMultipartUpload{Parts: parts},
		ChecksumCRC64NVME: aws.String(recoverable.EncodeCRC(whole)),
		ChecksumType:      types.ChecksumTypeFullObject,
		MpuObjectSize:     aws.Int64(size),
		IfNoneMatch:       aws.String("*"),
	})
	return err
}

// unsignedBody is the per-call option the stream adds to requests that carry
// data when it sends a CRC64NVME header (recoverable's Stream.bodyOptions):
// the body goes out as UNSIGNED-PAYLOAD instead of being hashed with SHA-256
// for the signature, which the SDK does on plain-http endpoints. The ceiling
// sends its parts the same way; TestStreamSendsUnsignedPayload checks that
// the stream still does.
var unsignedBody = s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)

// benchClient is the client every side of BenchmarkUpload writes through: it
// times CompleteMultipartUpload.
type benchClient struct {
	*s3.Client
	completeNs atomic.Int64
}

func (c *benchClient) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	start := time.Now()
	defer func() { c.completeNs.Add(int64(time.Since(start))) }()
	return c.Client.CompleteMultipartUpload(ctx, in, opts...)
}
