package harness

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"google.golang.org/grpc"

	"github.com/s3once/s3once/sink"
)

// setEndpoint sets Beam's --endpoint flag for the test.
func setEndpoint(t *testing.T, endpoint string) {
	t.Helper()
	was := *jobopts.Endpoint
	*jobopts.Endpoint = endpoint
	t.Cleanup(func() { *jobopts.Endpoint = was })
}

// A job-service endpoint that looks like an S3 URL fails at once, with the
// sink's own line (sink.CheckBeamEndpoint) naming --s3-endpoint, on every
// runner: those that dial a job service would wait minutes, and the others
// do not read --endpoint, so the S3 URL there was meant for the sink. A
// job service's address (host:port, a gRPC target) is not refused by it.
func TestJobEndpointLooksLikeS3(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		runner, endpoint, s3 string
		bad                  bool
	}{
		{"", "http://127.0.0.1:7070", "", true},
		{"prism", "https://s3.example.com", "", true},
		{"universal", "127.0.0.1:7070", "http://127.0.0.1:7070", true},
		{"flink", "localhost:80", "http://localhost", true},
		{"spark", "http://127.0.0.1:7070", "http://127.0.0.1:7070", true},
		{"dataflow", "http://127.0.0.1:7070", "http://127.0.0.1:7070", true},
		{"direct", "http://127.0.0.1:7070", "", true},
		{"direct", "localhost:8099", "http://127.0.0.1:7070", false},
		{"dataflow", "dns:///jobs.example.com:8099", "", false},
		{"", "", "http://127.0.0.1:7070", false},
	} {
		setEndpoint(t, c.endpoint)
		err := checkJobEndpoint(ctx, c.runner, c.s3, time.Minute)
		if !c.bad {
			if err != nil {
				t.Errorf("--runner=%q --endpoint=%q: %v, want no refusal", c.runner, c.endpoint, err)
			}
			continue
		}
		if !errors.Is(err, sink.ErrInvalidConfig) {
			t.Errorf("--runner=%q --endpoint=%q --s3-endpoint=%q: %v, want sink.ErrInvalidConfig", c.runner, c.endpoint, c.s3, err)
			continue
		}
		if want := sink.CheckBeamEndpoint(c.s3); err.Error() != want.Error() {
			t.Errorf("--endpoint=%q: %q, want the sink's line %q", c.endpoint, err, want)
		}
		for _, want := range []string{"looks like an S3 endpoint", "--s3-endpoint", c.endpoint} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("--endpoint=%q: %q does not say %q", c.endpoint, err, want)
			}
		}
	}
}

// An endpoint where no job service answers (an HTTP server, a closed port)
// fails within the wait, saying so; a gRPC server passes.
func TestJobEndpointMustAnswer(t *testing.T) {
	ctx := context.Background()
	s3like := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer s3like.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	for _, addr := range []string{strings.TrimPrefix(s3like.URL, "http://"), closedAddr} {
		setEndpoint(t, addr)
		err := checkJobEndpoint(ctx, "universal", "", 300*time.Millisecond)
		if !errors.Is(err, errJobEndpoint) || !strings.Contains(err.Error(), "no job service answers at --endpoint "+addr) {
			t.Errorf("--endpoint=%s: %v, want no job service answers", addr, err)
		}
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	go srv.Serve(l)
	defer srv.Stop()
	setEndpoint(t, l.Addr().String())
	if err := checkJobEndpoint(ctx, "universal", "http://127.0.0.1:7070", time.Minute); err != nil {
		t.Errorf("a gRPC server at --endpoint: %v", err)
	}
	// The same server, named by a gRPC target with its resolver's scheme.
	setEndpoint(t, "dns:///"+l.Addr().String())
	if err := checkJobEndpoint(ctx, "universal", "http://127.0.0.1:7070", time.Minute); err != nil {
		t.Errorf("a gRPC server at --endpoint dns:///...: %v", err)
	}
}
