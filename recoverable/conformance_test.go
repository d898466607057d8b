package recoverable_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/streamtest"
	"github.com/s3once/s3once/recoverable"
)

var server *s3test.Server

func TestMain(m *testing.M) {
	s, err := s3test.Launch(s3test.Options{})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	server = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// TestConformance runs the stream contract against the real S3 server.
func TestConformance(t *testing.T) {
	streamtest.Run(t, streamtest.Env{
		Client: server.Client(s3test.ClientOptions{}),
		Bucket: func(t *testing.T) string { return server.Bucket(t) },
	})
}

// TestConformanceRandomETags runs the stream contract against a server
// whose part ETags change on every upload, as in SSE-KMS buckets: a part
// uploaded again with the same bytes has another ETag.
func TestConformanceRandomETags(t *testing.T) {
	fc := s3fault.New(server.Client(s3test.ClientOptions{}))
	fc.RandomETags()
	streamtest.Run(t, streamtest.Env{
		Client: fc,
		Bucket: func(t *testing.T) string { return server.Bucket(t) },
	})
}

// TestServerKilledBetweenPersistAndRecover: the S3 server dies (SIGKILL) after a
// persist and comes back; the file is still byte-exact.
func TestServerKilledBetweenPersistAndRecover(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	c := srv.Client(s3test.ClientOptions{})
	bucket := srv.Bucket(t)
	ctx := context.Background()
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: streamtest.PartSize, InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	data := streamtest.Data(31, 3*streamtest.PartSize+5000)
	cut := 2*streamtest.PartSize + 2500
	s, err := w.Open(ctx, bucket, "file", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(data[:cut]); err != nil {
		t.Fatal(err)
	}
	rr, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	s2, err := w.Recover(ctx, rr)
	if err != nil {
		t.Fatalf("Recover after server restart: %v", err)
	}
	if _, err := s2.Write(data[cut:]); err != nil {
		t.Fatal(err)
	}
	cr, err := s2.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := streamtest.Complete(ctx, c, cr); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if got := s3test.Object(t, c, bucket, "file"); !bytes.Equal(got, data) {
		t.Fatalf("object differs after server restart: %d bytes, want %d", len(got), len(data))
	}
}

// TestServerPartCeiling: a server whose ceiling is 3 parts and a writer told the
// same: the writer refuses part 4 itself, with a typed error, before the server
// has to.
func TestServerPartCeiling(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{MaxParts: 3})
	c := srv.Client(s3test.ClientOptions{})
	bucket := srv.Bucket(t)
	ctx := context.Background()
	// Without the writer's own limit the server refuses part 4: the stream
	// breaks loudly rather than silently.
	loose, err := recoverable.NewWriter(c, recoverable.Options{PartSize: streamtest.PartSize})
	if err != nil {
		t.Fatal(err)
	}
	s := streamtest.Open(t, loose, bucket, "loose")
	s.Write(streamtest.Data(40, 4*streamtest.PartSize+1))
	if _, err := s.Persist(ctx); err == nil {
		t.Fatal("server with a 3-part ceiling accepted part 4")
	}
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: streamtest.PartSize, MaxParts: 3})
	if err != nil {
		t.Fatal(err)
	}
	s2 := streamtest.Open(t, w, bucket, "tight")
	data := streamtest.Data(41, 3*streamtest.PartSize)
	if _, err := s2.Write(data); err != nil {
		t.Fatalf("writing exactly 3 parts: %v", err)
	}
	_, err = s2.Write([]byte("more"))
	var e *recoverable.Error
	if !errors.Is(err, recoverable.ErrPartLimit) || !errors.As(err, &e) || e.UploadID == "" {
		t.Fatalf("Write past 3 parts: %v, want a typed ErrPartLimit", err)
	}
	cr, err := s2.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := streamtest.Complete(ctx, c, cr); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if got := s3test.Object(t, c, bucket, "tight"); !bytes.Equal(got, data) {
		t.Fatal("object differs")
	}
}

func TestBadOptions(t *testing.T) {
	c := server.Client(s3test.ClientOptions{})
	for _, tc := range []struct {
		o    recoverable.Options
		want string
	}{
		{recoverable.Options{PartSize: 1 << 20}, "PartSize"},
		{recoverable.Options{PartSize: 6 << 30}, "PartSize"},
		{recoverable.Options{Concurrency: -1}, "Concurrency"},
		{recoverable.Options{MaxParts: 10001}, "MaxParts"},
		{recoverable.Options{MaxParts: -3}, "MaxParts"},
		{recoverable.Options{InlineTailMax: 1 << 20}, "InlineTailMax"},
		{recoverable.Options{StagingPrefix: "/abs"}, "StagingPrefix"},
	} {
		_, err := recoverable.NewWriter(c, tc.o)
		if !errors.Is(err, recoverable.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewWriter(%+v) = %v, want ErrInvalidOptions naming %s", tc.o, err, tc.want)
		}
		// Validate refuses the same, without a client.
		if verr := tc.o.Validate(); verr == nil || err == nil || verr.Error() != err.Error() {
			t.Errorf("Validate(%+v) = %v; NewWriter said %v", tc.o, verr, err)
		}
	}
	if err := (recoverable.Options{}).Validate(); err != nil {
		t.Errorf("the zero Options do not validate: %v", err)
	}
	if _, err := recoverable.NewWriter(nil, recoverable.Options{}); !errors.Is(err, recoverable.ErrInvalidOptions) {
		t.Errorf("nil client: %v", err)
	}
	// Every problem at once.
	_, err := recoverable.NewWriter(c, recoverable.Options{PartSize: 1, Concurrency: -1})
	if err == nil || !strings.Contains(err.Error(), "PartSize") || !strings.Contains(err.Error(), "Concurrency") {
		t.Errorf("two bad options reported as %v", err)
	}
}

func TestInvalidToken(t *testing.T) {
	w, _ := recoverable.NewWriter(server.Client(s3test.ClientOptions{}), recoverable.Options{})
	good := recoverable.ResumeToken{Bucket: "b", Key: "k", UploadID: "u", PartSize: recoverable.MinPartSize}
	for name, mut := range map[string]func(*recoverable.ResumeToken){
		"no bucket":      func(r *recoverable.ResumeToken) { r.Bucket = "" },
		"small parts":    func(r *recoverable.ResumeToken) { r.PartSize = 10 },
		"bytes mismatch": func(r *recoverable.ResumeToken) { r.Parts.Count = 2; r.Parts.Bytes = 7 },
		"tail too long":  func(r *recoverable.ResumeToken) { r.Tail.Len = recoverable.MinPartSize + 1; r.Tail.Object = "x" },
		"inline short":   func(r *recoverable.ResumeToken) { r.Tail.Len = 3; r.Tail.Inline = []byte{1} },
		"both":           func(r *recoverable.ResumeToken) { r.Tail.Len = 1; r.Tail.Inline = []byte{1}; r.Tail.Object = "x" },
		"negative parts": func(r *recoverable.ResumeToken) { r.Parts.Count = -1 },
	} {
		rr := good
		mut(&rr)
		if _, err := w.Recover(context.Background(), rr); !errors.Is(err, recoverable.ErrInvalidToken) {
			t.Errorf("%s: Recover = %v, want ErrInvalidToken", name, err)
		}
	}
}

// slowParts blocks every UploadPart until released, counting those in flight.
type slowParts struct {
	*s3.Client
	release  chan struct{}
	inFlight atomic.Int32
	peak     atomic.Int32
}

func (s *slowParts) UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	n := s.inFlight.Add(1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	defer s.inFlight.Add(-1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Client.UploadPart(ctx, in, opts...)
}

// TestBackpressure: a server that does not answer makes Write block once
// Concurrency parts are in flight and one more buffer is full; memory does not
// grow with what the caller tries to write.
func TestBackpressure(t *testing.T) {
	slow := &slowParts{Client: server.Client(s3test.ClientOptions{}), release: make(chan struct{})}
	bucket := server.Bucket(t)
	const conc = 2
	w, _ := recoverable.NewWriter(slow, recoverable.Options{PartSize: streamtest.PartSize, Concurrency: conc})
	ctx := context.Background()
	s, err := w.Open(ctx, bucket, "file", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := streamtest.Data(50, 6*streamtest.PartSize)
	var written atomic.Int64
	done := make(chan error, 1)
	const chunk = 64 << 10
	go func() {
		for off := 0; off < len(data); off += chunk {
			n, err := s.Write(data[off : off+chunk])
			written.Add(int64(n))
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	// Wait until the writer is stuck: conc parts in flight, one buffer full
	// (the Write that filled it has not returned).
	limit := int64((conc + 1) * streamtest.PartSize)
	for written.Load() < limit-chunk || slow.inFlight.Load() < conc {
		select {
		case err := <-done:
			t.Fatalf("Write finished (%v) with the server not answering", err)
		case <-time.After(time.Millisecond):
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Write returned (%v) beyond %d buffered bytes", err, limit)
	case <-time.After(200 * time.Millisecond):
	}
	if got := written.Load(); got > limit {
		t.Fatalf("Write took %d bytes with the server stalled, more than %d of buffers", got, limit)
	}
	close(slow.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p := slow.peak.Load(); p > conc {
		t.Fatalf("%d parts in flight at once, Concurrency is %d", p, conc)
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := streamtest.Complete(ctx, slow, cr); err != nil {
		t.Fatal(err)
	}
	if got := s3test.Object(t, slow, bucket, "file"); !bytes.Equal(got, data) {
		t.Fatal("object differs")
	}
}
