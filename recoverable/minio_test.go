package recoverable_test

import (
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/streamtest"
)

// TestConformanceMinIO runs the stream contract against MinIO, a second,
// independent S3 server, so that the suite does not encode one server's
// quirks.
func TestConformanceMinIO(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{Kind: s3test.MinIO})
	streamtest.Run(t, streamtest.Env{
		Client: srv.Client(s3test.ClientOptions{}),
		Bucket: func(t *testing.T) string { return srv.Bucket(t) },
	})
}
