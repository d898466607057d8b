package bench

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// TestBenchServerKeepsConnections checks a premise of every benchmark: the
// server they share keeps connections open between requests, as S3 does, so
// a file of many parts is written over a few connections (one per request
// in flight) rather than one connection per request.
func TestBenchServerKeepsConnections(t *testing.T) {
	s := server(t)
	var dials atomic.Int64
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		MaxIdleConnsPerHost: 64,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
	}
	defer tr.CloseIdleConnections()
	c := s.Client(s3test.ClientOptions{HTTPClient: &http.Client{Transport: tr}})
	bucket, err := s.NewBucket(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: recoverable.MinPartSize, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	// 12 parts, the create, the listing and the completion: 15 requests,
	// at most 2 parts in flight at once.
	if err := writeStream(context.Background(), w, c, bucket, "k", 12*recoverable.MinPartSize); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n > 4 {
		t.Fatalf("%d connections dialled for 15 requests: the server closes connections between requests", n)
	}
}
