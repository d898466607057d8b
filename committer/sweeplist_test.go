package committer_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// countListings counts ListMultipartUploads calls.
type countListings struct {
	committer.S3
	n atomic.Int32
}

func (c *countListings) ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, opts ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	c.n.Add(1)
	return c.S3.ListMultipartUploads(ctx, in, opts...)
}

// TestSweepListsOnlyItsFolders: the sweep finds the uploads under its
// folders on a server that matches a listing's Prefix as a whole key
// (MinIO), counts none outside them, and reads at most one page past each
// folder: uploads sorted before and after the output folder are neither
// counted nor paged through. On the in-memory S3 with pages of two entries,
// and on MinIO.
func TestSweepListsOnlyItsFolders(t *testing.T) {
	servers := map[string]func(t *testing.T) *env{
		"Fake": func(t *testing.T) *env {
			fake := s3mem.New(s3mem.Options{PageSize: 2})
			return &env{t: t, client: fake.NewClient(s3mem.ClientOptions{}), bucket: fake.Bucket()}
		},
		"MinIO": func(t *testing.T) *env {
			srv := s3test.Start(t, s3test.Options{Kind: s3test.MinIO})
			return &env{t: t, srv: srv, client: srv.Client(s3test.ClientOptions{MaxAttempts: 1}), bucket: srv.Bucket(t)}
		},
	}
	// calls bounds the listings: two pages under out/ and one past it on
	// the fake, then one past stage/; one each on MinIO (pages of 1,000).
	calls := map[string]int32{"Fake": 4, "MinIO": 2}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			e := start(t)
			for _, k := range []string{"a/1", "a/2", "a/3", "out/notmine.bin", "zz/1", "zz/2", "zz/3", "zz/4", "zz/5", "zz/6"} {
				e.openUpload(k, 1)
			}
			for n := 1; n <= 3; n++ {
				e.openUpload(fileName("out", n), 1)
			}
			client := &countListings{S3: e.client}
			c := newCommitter(t, client, committer.Options{SkipPreflight: true})
			rep, err := c.Sweep(context.Background(), committer.SweepOptions{
				Bucket: e.bucket, Prefix: "out", StagingPrefix: "stage", OlderThan: 2 * time.Hour, DryRun: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			want := committer.SweepCounts{Scanned: 4, NotOwn: 1, Kept: 3}
			if rep.Uploads != want {
				t.Fatalf("uploads %+v, want %+v", rep.Uploads, want)
			}
			if n := client.n.Load(); n > calls[name] {
				t.Fatalf("%d ListMultipartUploads calls, want at most %d", n, calls[name])
			}
		})
	}
}
