package committer_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

const minioPrefix = "TestOnMinIO/"

// minio is the MinIO server TestOnMinIO's subtests share, each with a bucket
// of its own.
var minio struct {
	once sync.Once
	srv  *s3test.Server
	err  error
}

// TestOnMinIO runs the committer's protocol tests (the ones that also run on
// the in-memory S3) against MinIO, a second, independent S3 server. How
// MinIO differs from versitygw is written down in internal/testkit/s3test's package
// documentation.
func TestOnMinIO(t *testing.T) {
	t.Cleanup(func() {
		if minio.srv != nil {
			minio.srv.Stop()
		}
	})
	for _, tc := range fakeTests {
		t.Run(tc.name, tc.fn)
	}
}

// onMinIO returns an env on the shared MinIO when t runs under TestOnMinIO,
// else nil.
func onMinIO(t *testing.T) *env {
	if !strings.HasPrefix(t.Name(), minioPrefix) {
		return nil
	}
	minio.once.Do(func() { minio.srv, minio.err = s3test.Launch(s3test.Options{Kind: s3test.MinIO}) })
	if minio.err != nil {
		t.Fatalf("start MinIO: %v", minio.err)
	}
	srv := minio.srv
	return &env{t: t, srv: srv, client: srv.Client(s3test.ClientOptions{MaxAttempts: 1}), bucket: srv.Bucket(t)}
}
