package recoverable_test

import (
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/internal/testkit/streamtest"
)

// TestConformanceMem runs the stream contract against the in-memory S3, with
// listings paged two entries at a time so every pagination path runs.
func TestConformanceMem(t *testing.T) {
	fake := s3mem.New(s3mem.Options{PageSize: 2})
	streamtest.Run(t, streamtest.Env{
		Client: fake.NewClient(s3mem.ClientOptions{}),
		Bucket: func(t *testing.T) string { return fake.Bucket() },
	})
}

// TestConformanceMemRandomETags: the same with ETags that are not MD5s.
func TestConformanceMemRandomETags(t *testing.T) {
	fake := s3mem.New(s3mem.Options{PageSize: 3, RandomETags: true})
	streamtest.Run(t, streamtest.Env{
		Client: fake.NewClient(s3mem.ClientOptions{}),
		Bucket: func(t *testing.T) string { return fake.Bucket() },
	})
}
