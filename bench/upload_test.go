package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/benchkit"
	"github.com/s3once/s3once/internal/testkit/streamtest"
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
	// The ceiling for any writer fed by Write calls: the ceiling's requests
	// plus the work such a writer cannot leave out, done the cheapest way,
	// with no bookkeeping. It copies each Write of 256 KiB into one of
	// Concurrency+1 part buffers (allocated in advance), checksums each
	// 64 KiB piece as it copies it, sends a full buffer while the next one
	// fills, and lists the parts once before completing (the commit
	// protocol's check of the parts against the token). Stream vs this side
	// measures the stream's own overhead; this side vs the ceiling, what the
	// copy, the checksum and the listing cost.
	{"copy-ceiling", (*uploadBench).copyCeiling},
}

type uploadBench struct {
	env     *env
	client  *benchClient
	writer  *recoverable.Writer
	up      *manager.Uploader
	bufs    [][]byte // the ceiling's part buffers
	partCRC uint64
	// free holds the copy ceiling's Concurrency+1 part buffers while no
	// part is filled into them or sent from them.
	free chan []byte
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
					list := time.Duration(u.client.listNs.Load())
					b.ReportMetric(float64(list.Microseconds())/1000/float64(n), "list-ms/op")
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
		u.bufs = append(u.bufs, benchkit.Fill(make([]byte, partSize)))
	}
	u.free = make(chan []byte, concurrency+1)
	for range concurrency + 1 {
		u.free <- benchkit.Fill(make([]byte, partSize))
	}
	// The ceiling's buffers are allocated and touched before the timing; so
	// are the stream's, in the writer's pool, as in a worker that has written
	// files before.
	if err := fillPool(context.Background(), w, e.bucket); err != nil {
		b.Fatal(err)
	}
	// The timed calls alone count in complete-ms and list-ms.
	c.completeNs.Store(0)
	c.listNs.Store(0)
	u.partCRC = crc64nvme.Checksum(u.bufs[0]) // every part holds the same bytes
	return u
}

func (u *uploadBench) stream(ctx context.Context, key string, size int64) error {
	return writeStream(ctx, u.writer, u.client, u.env.bucket, key, size)
}

// fillPool leaves w's pool holding all the part buffers a stream may take
// (Concurrency+1), touched: Concurrency+1 streams are open at once, each
// fills a buffer of its own to one byte short of a part (so that nothing is
// uploaded), and each is disposed of, which gives its buffer back and
// aborts its upload. One file written through w would not do: its uploads
// may finish before its last buffer is needed, and the first timed file
// would then allocate that buffer (8 MiB of fresh pages, in the timing).
func fillPool(ctx context.Context, w *recoverable.Writer, bucket string) error {
	o := w.Options()
	streams := make([]*recoverable.Stream, 0, o.Concurrency+1)
	defer func() {
		for _, s := range streams {
			_ = s.Dispose(ctx)
		}
	}()
	for i := range o.Concurrency + 1 {
		s, err := w.Open(ctx, bucket, fmt.Sprintf("upload/warm-up-%d-%d", time.Now().UnixNano(), i), recoverable.ObjectOptions{})
		if err != nil {
			return err
		}
		streams = append(streams, s)
		if err := writeAll(s, benchkit.NewPattern(o.PartSize-1)); err != nil {
			return err
		}
	}
	return nil
}

// writeStream writes size bytes of the pattern to a new stream and commits it.
func writeStream(ctx context.Context, w *recoverable.Writer, c streamtest.Backend, bucket, key string, size int64) error {
	s, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		return err
	}
	defer s.Dispose(ctx)
	if err := writeAll(s, benchkit.NewPattern(size)); err != nil {
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
		Bucket: aws.String(u.env.bucket), Key: aws.String(key), Body: benchkit.NewPattern(size),
	})
	return err
}

func (u *uploadBench) uploaderCRC64(ctx context.Context, key string, size int64) error {
	_, err := u.up.Upload(ctx, &s3.PutObjectInput{
		Bucket: aws.String(u.env.bucket), Key: aws.String(key), Body: benchkit.NewPattern(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme,
	})
	return err
}

func (u *uploadBench) ceiling(ctx context.Context, key string, size int64) error {
	upload, n, err := u.create(ctx, "ceiling", key, size)
	if err != nil {
		return err
	}
	parts := make([]types.CompletedPart, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i := range n {
		g.Go(func() (err error) {
			parts[i], err = u.uploadPart(gctx, key, upload, i+1, u.bufs[i%len(u.bufs)], u.partCRC)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var whole uint64
	for range n {
		whole = recoverable.CRC64Combine(whole, u.partCRC, partSize)
	}
	return u.complete(ctx, key, upload, parts, whole, size)
}

func (u *uploadBench) copyCeiling(ctx context.Context, key string, size int64) error {
	upload, n, err := u.create(ctx, "copy ceiling", key, size)
	if err != nil {
		return err
	}
	parts := make([]types.CompletedPart, n)
	var whole uint64
	src := benchkit.NewPattern(size)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i := range n {
		var buf []byte
		select {
		case buf = <-u.free:
		case <-gctx.Done():
			return g.Wait()
		}
		buf = buf[:0]
		var crc uint64
		for len(buf) < partSize {
			p := src.Next(writeChunk)
			for len(p) > 0 {
				k := min(len(p), 64<<10)
				buf = append(buf, p[:k]...)
				crc = crc64nvme.Update(crc, p[:k])
				p = p[k:]
			}
		}
		whole = recoverable.CRC64Combine(whole, crc, partSize)
		g.Go(func() (err error) {
			defer func() { u.free <- buf }()
			parts[i], err = u.uploadPart(gctx, key, upload, i+1, buf, crc)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	_, err = u.client.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(u.env.bucket), Key: aws.String(key), UploadId: aws.String(upload)})
	if err != nil {
		return err
	}
	return u.complete(ctx, key, upload, parts, whole, size)
}

// create starts a ceiling's upload of size bytes, a whole number of parts,
// and returns its ID and the number of parts.
func (u *uploadBench) create(ctx context.Context, side, key string, size int64) (string, int, error) {
	if size%partSize != 0 {
		return "", 0, fmt.Errorf("%s: size %d is not a multiple of the part size", side, size)
	}
	out, err := u.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(u.env.bucket), Key: aws.String(key),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumType: types.ChecksumTypeFullObject,
	})
	if err != nil {
		return "", 0, err
	}
	return aws.ToString(out.UploadId), int(size / partSize), nil
}

// uploadPart sends buf, whose CRC64NVME is crc, as part num of a ceiling's
// upload, the way the stream sends a part.
func (u *uploadBench) uploadPart(ctx context.Context, key, upload string, num int, buf []byte, crc uint64) (types.CompletedPart, error) {
	sum := aws.String(s3call.EncodeCRC(crc))
	p, err := u.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: aws.String(u.env.bucket), Key: aws.String(key), UploadId: aws.String(upload), PartNumber: aws.Int32(int32(num)),
		Body: bytes.NewReader(buf), ContentLength: aws.Int64(int64(len(buf))),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumCRC64NVME: sum,
	}, unsignedBody)
	if err != nil {
		return types.CompletedPart{}, err
	}
	return types.CompletedPart{PartNumber: aws.Int32(int32(num)), ETag: p.ETag, ChecksumCRC64NVME: sum}, nil
}

// complete completes a ceiling's upload as the stream's commit does: with
// its parts, the full-object CRC64NVME, the size and If-None-Match.
func (u *uploadBench) complete(ctx context.Context, key, upload string, parts []types.CompletedPart, crc uint64, size int64) error {
	_, err := u.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(u.env.bucket), Key: aws.String(key), UploadId: aws.String(upload),
		MultipartUpload:   &types.CompletedMultipartUpload{Parts: parts},
		ChecksumCRC64NVME: aws.String(s3call.EncodeCRC(crc)),
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
// times CompleteMultipartUpload and ListParts.
type benchClient struct {
	*s3.Client
	completeNs atomic.Int64
	listNs     atomic.Int64
}

func (c *benchClient) ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	start := time.Now()
	defer func() { c.listNs.Add(int64(time.Since(start))) }()
	return c.Client.ListParts(ctx, in, opts...)
}

func (c *benchClient) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	start := time.Now()
	defer func() { c.completeNs.Add(int64(time.Since(start))) }()
	return c.Client.CompleteMultipartUpload(ctx, in, opts...)
}

// turnSides are the sides BenchmarkUploadInTurns writes through in turns:
// uploadSides' ceiling, copy-ceiling, stream and uploader.
var turnSides = []string{"ceiling", "copy-ceiling", "stream", "uploader"}

// turnRatios are the throughput ratios BenchmarkUploadInTurns reports, each
// a pair of turnSides: {faster if above 1, the other}.
var turnRatios = [][2]string{
	{"stream", "ceiling"},
	{"stream", "copy-ceiling"},
	{"copy-ceiling", "ceiling"},
	{"stream", "uploader"},
}

// BenchmarkUploadInTurns writes files of each size through the ceiling, the
// copy ceiling, the stream and manager.Uploader in turns, in one process,
// and reports their throughput ratios file by file. One operation is one
// file through each side, in an order that rotates from operation to
// operation, so that in every four operations each side goes first,
// second, third and last once. BenchmarkUpload runs each side in a process
// of its own, seconds or minutes apart; whatever the machine does over such
// spans (another tenant's load, the kernel's writeback) differs between the
// sides' samples and widens the interval of their ratio. Here files a few
// hundred milliseconds apart share it, and their ratio cancels it.
//
// Metrics, each the geometric mean over the operations of the ratio of two
// sides' throughputs in that operation (above 1: the first is faster):
// stream/ceiling, stream/copy-ceiling, copy-ceiling/ceiling and
// stream/uploader (turnRatios).
func BenchmarkUploadInTurns(b *testing.B) {
	for _, size := range []int64{64 * MiB, 256 * MiB, 1 * GiB} {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			u := newUploadBench(b)
			ctx := context.Background()
			b.SetBytes(size * int64(len(turnSides)))
			run := map[string]func(u *uploadBench, ctx context.Context, key string, size int64) error{}
			for _, s := range uploadSides {
				run[s.name] = s.run
			}
			// One untimed file of Concurrency parts through each side first,
			// so that what only the first file of a process pays (the
			// client's connections, the server's first upload in the bucket)
			// does not land on the side that goes first in the first turn.
			for _, side := range turnSides {
				key := "turns/warm-up/" + side
				if err := run[side](u, ctx, key, partSize*concurrency); err != nil {
					b.Fatal(err)
				}
				u.env.deleteKey(b, key)
			}
			logs := make([]float64, len(turnRatios)) // sums of the ratios' logarithms
			n := 0
			for b.Loop() {
				secs := map[string]float64{}
				for i := range turnSides {
					side := turnSides[(i+n)%len(turnSides)]
					key := fmt.Sprintf("turns/%s/%s/%d", sizeName(size), side, n)
					start := time.Now()
					if err := run[side](u, ctx, key, size); err != nil {
						b.Fatal(err)
					}
					secs[side] = time.Since(start).Seconds()
					b.StopTimer()
					u.env.checkSize(b, key, size)
					u.env.deleteKey(b, key)
					b.StartTimer()
				}
				// A throughput ratio is the inverse ratio of the times.
				for i, r := range turnRatios {
					logs[i] += math.Log(secs[r[1]] / secs[r[0]])
				}
				n++
			}
			for i, r := range turnRatios {
				b.ReportMetric(math.Exp(logs[i]/float64(n)), r[0]+"/"+r[1])
			}
		})
	}
}
