package bench

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/s3once/s3once/internal/testkit/benchkit"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// payloadHashes records the x-amz-content-sha256 header of every PUT.
type payloadHashes struct {
	mu   sync.Mutex
	seen []string
}

func (p *payloadHashes) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut {
		p.mu.Lock()
		p.seen = append(p.seen, r.Header.Get("X-Amz-Content-Sha256"))
		p.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestStreamSendsUnsignedPayload checks the premise of BenchmarkUpload's
// ceiling side, which sends its parts as UNSIGNED-PAYLOAD because the stream
// does: with checksums on, the stream's parts and side objects go out
// UNSIGNED-PAYLOAD, not SHA-256-signed. (That the server still refuses a body
// whose CRC64NVME header does not match is recoverable's
// TestCorruptedBodiesRefused.)
func TestStreamSendsUnsignedPayload(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	hashes := &payloadHashes{}
	c := srv.Client(s3test.ClientOptions{HTTPClient: &http.Client{Transport: hashes}})
	bucket := srv.Bucket(t)
	ctx := context.Background()
	const ps = recoverable.MinPartSize
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: ps, InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Open(ctx, bucket, "k", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Dispose(ctx)
	if _, err := s.Write(benchkit.Fill(make([]byte, 2*ps+1<<20))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Persist(ctx); err != nil { // two parts and a 1 MiB side object
		t.Fatal(err)
	}
	hashes.mu.Lock()
	defer hashes.mu.Unlock()
	if len(hashes.seen) != 3 {
		t.Fatalf("%d PUTs seen, want 3 (two parts, one side object)", len(hashes.seen))
	}
	for _, h := range hashes.seen {
		if h != "UNSIGNED-PAYLOAD" {
			t.Fatalf("x-amz-content-sha256 %q, want UNSIGNED-PAYLOAD", h)
		}
	}
}
