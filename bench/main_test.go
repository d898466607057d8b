package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/benchkit"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// The shape every stream and uploader here writes with: the recoverable
// package's defaults.
const (
	partSize    = recoverable.DefaultPartSize
	concurrency = recoverable.DefaultConcurrency
	// writeChunk is the size of each Write call a stream gets.
	writeChunk = 256 << 10
	// attempts is the SDK's retry budget on every client: its default.
	attempts = 3
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// The S3 server the benchmarks of this process share, started on first use:
// `go test` without -bench starts nothing.
var (
	srvOnce sync.Once
	srv     *s3test.Server
	srvErr  error
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	code := ptest.MainRet(m)
	if srv != nil {
		srv.Stop()
	}
	os.Exit(code)
}

// server is the benchmarks' S3 server, started once per process. It keeps
// connections open between requests, as S3 does (versitygw's default closes
// each one after its reply): a benchmark measures the requests, not a TCP
// connection set up for every one of them. Its data lives in RAM where the
// machine has a RAM-backed folder (ramDir).
func server(b testing.TB) *s3test.Server {
	b.Helper()
	srvOnce.Do(func() { srv, srvErr = s3test.Launch(s3test.Options{KeepAlive: true, TempDir: ramDir()}) })
	if srvErr != nil {
		b.Fatal(srvErr)
	}
	return srv
}

// ramDir returns a RAM-backed folder for the benchmark server's data
// (Linux's /dev/shm), or "" for the system's temporary folder where there is
// none. On a disk, the kernel writes each sample's files back while later
// samples run (a 1 GiB file is 2 GiB of writes: the parts, then the object
// they are joined into), so every sample paid for part of an earlier one's
// writes: at 256 MiB the ceiling's time varied twice as much from sample to
// sample on disk as in RAM. The server's storage is the same for every side
// of a comparison; in RAM it adds no noise of its own.
func ramDir() string {
	const shm = "/dev/shm"
	probe, err := os.MkdirTemp(shm, "s3once-probe-*")
	if err != nil {
		return ""
	}
	_ = os.Remove(probe)
	return shm
}

// env is one benchmark's server, client and bucket.
type env struct {
	srv    *s3test.Server
	client *s3.Client
	bucket string
}

func newEnv(b testing.TB) *env {
	b.Helper()
	s := server(b)
	bucket, err := s.NewBucket(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	e := &env{srv: s, client: s.Client(s3test.ClientOptions{MaxAttempts: attempts}), bucket: bucket}
	b.Cleanup(func() { e.deletePrefix(b, "") })
	return e
}

// deletePrefix deletes every object under prefix and aborts every multipart
// upload under it, so the server's disk does not fill up.
func (e *env) deletePrefix(b testing.TB, prefix string) {
	b.Helper()
	ctx := context.Background()
	p := s3.NewListObjectsV2Paginator(e.client, &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			b.Fatalf("list s3://%s/%s: %v", e.bucket, prefix, err)
		}
		for _, o := range out.Contents {
			if _, err := e.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(e.bucket), Key: o.Key}); err != nil {
				b.Fatalf("delete %s: %v", aws.ToString(o.Key), err)
			}
		}
	}
	ups, err := e.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(e.bucket), Prefix: aws.String(prefix)})
	if err != nil {
		b.Fatalf("list uploads: %v", err)
	}
	for _, u := range ups.Uploads {
		_, err := e.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(e.bucket), Key: u.Key, UploadId: u.UploadId})
		if err != nil && !s3call.IsNoSuchUpload(err) {
			b.Fatalf("abort %s: %v", aws.ToString(u.Key), err)
		}
	}
}

// deleteKey deletes one object.
func (e *env) deleteKey(b *testing.B, key string) {
	b.Helper()
	if _, err := e.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)}); err != nil {
		b.Fatalf("delete %s: %v", key, err)
	}
}

// checkSize fails unless the object at key holds size bytes.
func (e *env) checkSize(b *testing.B, key string, size int64) {
	b.Helper()
	out, err := e.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)})
	if err != nil {
		b.Fatalf("head %s: %v", key, err)
	}
	if got := aws.ToInt64(out.ContentLength); got != size {
		b.Fatalf("%s holds %d bytes, want %d", key, got, size)
	}
}

// sizeName renders a byte count the way sub-benchmarks are named: 64MiB, 1GiB.
func sizeName(n int64) string {
	switch {
	case n >= GiB && n%GiB == 0:
		return fmt.Sprintf("%dGiB", n/GiB)
	case n >= MiB && n%MiB == 0:
		return fmt.Sprintf("%dMiB", n/MiB)
	case n >= KiB && n%KiB == 0:
		return fmt.Sprintf("%dKiB", n/KiB)
	}
	return fmt.Sprintf("%dB", n)
}

// allocMeter sums the bytes the process allocated over the measured spans.
type allocMeter struct {
	ms    runtime.MemStats
	from  uint64
	total uint64
}

func (a *allocMeter) start() {
	runtime.ReadMemStats(&a.ms)
	a.from = a.ms.TotalAlloc
}

func (a *allocMeter) stop() {
	runtime.ReadMemStats(&a.ms)
	a.total += a.ms.TotalAlloc - a.from
}

// perMiB is the allocation per MiB written, over n operations of size bytes.
func (a *allocMeter) perMiB(n int, size int64) float64 {
	return float64(a.total) / float64(n) / (float64(size) / MiB)
}

// writeAll writes src into s in Write calls of writeChunk bytes.
func writeAll(s *recoverable.Stream, src *benchkit.Pattern) error {
	for {
		p := src.Next(writeChunk)
		if len(p) == 0 {
			return nil
		}
		if _, err := s.Write(p); err != nil {
			return err
		}
	}
}
