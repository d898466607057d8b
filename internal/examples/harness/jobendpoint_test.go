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

	"google.golang.org/grpc"
)

// A job-service endpoint that looks like an S3 URL fails at once, naming
// --s3-endpoint, on the runners that read --endpoint as a job service, and
// is left alone on Dataflow, which reads it as its own option.
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
		{"dataflow", "http://127.0.0.1:7070", "http://127.0.0.1:7070", false},
		{"direct", "http://127.0.0.1:7070", "", false},
		{"", "", "http://127.0.0.1:7070", false},
	} {
		err := checkJobEndpoint(ctx, c.runner, c.endpoint, c.s3, time.Minute)
		if !c.bad {
			if err != nil {
				t.Errorf("--runner=%q --endpoint=%q: %v, want no check", c.runner, c.endpoint, err)
			}
			continue
		}
		if !errors.Is(err, errJobEndpoint) {
			t.Errorf("--runner=%q --endpoint=%q --s3-endpoint=%q: %v, want errJobEndpoint", c.runner, c.endpoint, c.s3, err)
			continue
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
		err := checkJobEndpoint(ctx, "universal", addr, "", 300*time.Millisecond)
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
	if err := checkJobEndpoint(ctx, "universal", l.Addr().String(), "http://127.0.0.1:7070", time.Minute); err != nil {
		t.Errorf("a gRPC server at --endpoint: %v", err)
	}
}
