package s3bucket_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// env is one test's server, bucket and client.
type env struct {
	t      *testing.T
	client *s3.Client // SDK retries off
	bucket string
}

// newEnv starts a versitygw for the test; under TestOnFake it is a new
// in-memory S3 (internal/testkit/s3mem) whose listings page two entries at
// a time, and under TestOnMinIO a bucket of the shared MinIO.
func newEnv(t *testing.T) *env {
	t.Helper()
	switch {
	case strings.HasPrefix(t.Name(), "TestOnFake/"):
		fake := s3mem.New(s3mem.Options{PageSize: 2})
		return &env{t: t, client: fake.NewClient(s3mem.ClientOptions{}), bucket: fake.Bucket()}
	case strings.HasPrefix(t.Name(), "TestOnMinIO/"):
		minio.once.Do(func() { minio.srv, minio.err = s3test.Launch(s3test.Options{Kind: s3test.MinIO}) })
		if minio.err != nil {
			t.Fatalf("start MinIO: %v", minio.err)
		}
		return &env{t: t, client: minio.srv.Client(s3test.ClientOptions{MaxAttempts: 1}), bucket: minio.srv.Bucket(t)}
	}
	srv := s3test.Start(t, s3test.Options{})
	return &env{t: t, client: srv.Client(s3test.ClientOptions{MaxAttempts: 1}), bucket: srv.Bucket(t)}
}

// minio is the MinIO server TestOnMinIO's subtests share, each with a
// bucket of its own.
var minio struct {
	once sync.Once
	srv  *s3test.Server
	err  error
}

// onEveryServer are the tests that also run on the in-memory S3 and on
// MinIO, whose listings differ from versitygw's.
var onEveryServer = []struct {
	name string
	fn   func(*testing.T)
}{
	{"ListUploads", TestListUploads},
}

// TestOnFake runs onEveryServer against the in-memory S3.
func TestOnFake(t *testing.T) {
	for _, tc := range onEveryServer {
		t.Run(tc.name, tc.fn)
	}
}

// TestOnMinIO runs onEveryServer against MinIO.
func TestOnMinIO(t *testing.T) {
	t.Cleanup(func() {
		if minio.srv != nil {
			minio.srv.Stop()
		}
	})
	for _, tc := range onEveryServer {
		t.Run(tc.name, tc.fn)
	}
}

// newClient returns a Client over api with short backoffs.
func newClient(t *testing.T, api s3bucket.API, o s3bucket.Options) *s3bucket.Client {
	t.Helper()
	if o.BaseBackoff == 0 {
		o.BaseBackoff = 2 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 20 * time.Millisecond
	}
	return s3bucket.New(api, o)
}

// payload returns n pseudo-random bytes determined by seed.
func payload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

// putETag writes body at key, unconditionally, and returns its ETag.
func (e *env) putETag(key string, body []byte) string {
	e.t.Helper()
	out, err := e.client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(e.bucket), Key: aws.String(key), Body: bytes.NewReader(body),
	})
	if err != nil {
		e.t.Fatalf("put %s: %v", key, err)
	}
	return aws.ToString(out.ETag)
}

// mustHold fails unless key holds exactly want.
func (e *env) mustHold(key string, want []byte) {
	e.t.Helper()
	out, err := e.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)})
	if err != nil {
		e.t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	if err != nil || !bytes.Equal(got, want) {
		e.t.Fatalf("%s holds %d bytes (%v), want %d bytes", key, len(got), err, len(want))
	}
}

// noHeadCRC hides the full-object checksum from HEAD, as a server that
// keeps none does.
type noHeadCRC struct{ s3bucket.API }

func (n noHeadCRC) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	out, err := n.API.HeadObject(ctx, in, opts...)
	if out != nil {
		out.ChecksumCRC64NVME = nil
		out.ChecksumType = ""
	}
	return out, err
}
