package sink

import (
	"errors"
	"github.com/s3once/s3once/internal/testkit/beamflag"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// The rule of CheckBeamEndpoint: an http, https or s3 URL, or the S3
// endpoint's own address, is refused; a job service's address (host:port,
// a gRPC target with its resolver's scheme) and an empty flag pass.
func TestBeamEndpointRule(t *testing.T) {
	for _, c := range []struct {
		endpoint, s3 string
		refused      bool
	}{
		{"http://127.0.0.1:7070", "", true},
		{"HTTPS://s3.us-east-1.amazonaws.com", "", true},
		{"https://s3.example.com/", "https://other.example.com", true},
		{"s3://demo/minimal", "", true},
		{" http://127.0.0.1:7070", "", true},
		{"127.0.0.1:7070", "http://127.0.0.1:7070", true},
		{"LOCALHOST:80", "http://localhost", true},
		{"minio:443", "https://minio", true},
		{"[::1]:9000", "http://[::1]:9000", true},

		{"", "", false},
		{"", "http://127.0.0.1:7070", false},
		{"localhost:8099", "", false},
		{"localhost:8099", "http://127.0.0.1:7070", false},
		{"127.0.0.1:8099", "http://127.0.0.1:7070", false},
		{"jobs.example.com:443", "https://s3.example.com", false},
		{"minio:80", "https://minio", false},
		{"dns:///jobs.example.com:8099", "", false},
		{"unix:///run/beam/jobs.sock", "", false},
		{"passthrough:///127.0.0.1:8099", "http://127.0.0.1:7070", false},
		{"localhost:8099", "not a url", false},
	} {
		err := checkBeamEndpoint(c.endpoint, c.s3)
		if (err != nil) != c.refused {
			t.Errorf("--endpoint %q with Endpoint %q: %v, want refused %v", c.endpoint, c.s3, err, c.refused)
			continue
		}
		if err == nil {
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrInvalidConfig) || strings.Contains(msg, "\n") {
			t.Errorf("--endpoint %q: %q, want one line wrapping ErrInvalidConfig", c.endpoint, msg)
		}
		for _, want := range []string{"--endpoint " + c.endpoint + " looks like an S3 endpoint", "job service (host:port)", "--s3-endpoint"} {
			if !strings.Contains(msg, want) {
				t.Errorf("--endpoint %q: %q does not say %q", c.endpoint, msg, want)
			}
		}
	}
}

// The S3 server's URL given to Beam's --endpoint: Preflight reports it,
// with the configuration's own problems, and makes no S3 call, not even to
// the endpoint the Config names; Write and TryWrite refuse it while the
// pipeline is built. All three give the same line.
func TestBeamEndpointRefusedBeforeAnyS3Call(t *testing.T) {
	s3srv, calls := beamflag.Recorder(t)
	beamflag.SetEndpoint(t, s3srv.URL)
	want := CheckBeamEndpoint(s3srv.URL)
	if want == nil {
		t.Fatalf("--endpoint %s passed", s3srv.URL)
	}

	cfg := testConfig("bucket", "out")
	cfg.Endpoint = s3srv.URL
	err := Preflight(preflightContext(t), cfg)
	onlyProblem(t, err, want.Error())
	pe := preflightError(t, err)
	if !errors.Is(err, ErrPreflight) || !errors.Is(err, ErrInvalidConfig) || len(pe.Unchecked) != 1 || !strings.Contains(pe.Unchecked[0], "every S3 call") {
		t.Errorf("Preflight: %v, want ErrPreflight and ErrInvalidConfig, every S3 call unchecked", err)
	}
	// With AWS as the endpoint (the README's program given no
	// --s3-endpoint) the same, without a credential look-up.
	aws := testConfig("bucket", "out")
	aws.Endpoint = ""
	onlyProblem(t, Preflight(preflightContext(t), aws), want.Error())
	// A Config that is wrong too: both problems, still no S3 call.
	bad := cfg
	bad.Shards = -1
	if pe := preflightError(t, Preflight(preflightContext(t), bad)); len(pe.Problems) != 2 {
		t.Errorf("Preflight of a bad Config: %v, want two problems", pe)
	}

	_, s := beam.NewPipelineWithRoot()
	if _, err := TryWrite(s, beam.Create(s, "a"), cfg); !errors.Is(err, ErrInvalidConfig) || err.Error() != want.Error() {
		t.Errorf("TryWrite: %v, want %q", err, want)
	}
	if _, _, err := TryWriteWindows(s, beam.Create(s, "a"), cfg); err == nil || err.Error() != want.Error() {
		t.Errorf("TryWriteWindows: %v, want %q", err, want)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(panicText(r), want.Error()) {
				t.Errorf("Write panicked with %v, want %q", r, want)
			}
		}()
		Write(s, beam.Create(s, "a"), cfg)
	}()
	if n := calls.Load(); n != 0 {
		t.Errorf("%d requests reached the S3 endpoint, want none", n)
	}

	// A job service's address passes, and the preflight goes on to S3.
	beamflag.SetEndpoint(t, "localhost:8099")
	if err := Preflight(preflightContext(t), cfg); err == nil || calls.Load() == 0 {
		t.Errorf("with --endpoint localhost:8099 the preflight made no S3 call: %v", err)
	}
}

func panicText(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	if s, ok := r.(string); ok {
		return s
	}
	return ""
}
