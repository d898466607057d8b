package bench

import (
	"context"
	"runtime"
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// TestWarmUpFillsThePool checks a premise of the stream's side of
// BenchmarkUpload: after fillPool, a file that keeps every buffer busy
// allocates no part buffer in the timing (the ceilings' buffers are all
// allocated in advance too). Without it, the first timed file of a process
// allocated one or two buffers of PartSize whenever the warm-up's uploads
// had finished before its last buffer was needed.
func TestWarmUpFillsThePool(t *testing.T) {
	s := server(t)
	c := s.Client(s3test.ClientOptions{})
	bucket, err := s.NewBucket(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const ps = recoverable.MinPartSize
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: ps, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := fillPool(ctx, w, bucket); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := writeStream(ctx, w, c, bucket, "file", 8*ps); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// The file's requests allocate far less than a part (about 100 KiB a
	// request); a part buffer taken fresh is PartSize on its own.
	if got := after.TotalAlloc - before.TotalAlloc; got >= ps {
		t.Fatalf("a file after fillPool allocated %d bytes, at least a part buffer (%d): the pool was not full", got, ps)
	}
}
