package program

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/internal/testkit/beamflag"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// Run refuses the S3 server's URL given to Beam's --endpoint before it
// starts the runner (which would wait minutes for a job service there),
// with the sink's one line, which Format leaves as it is.
func TestRunRefusesBeamEndpoint(t *testing.T) {
	s3srv, calls := beamflag.Recorder(t)
	beamflag.SetEndpoint(t, s3srv.URL)
	want := sink.CheckBeamEndpoint("")
	if want == nil {
		t.Fatalf("--endpoint %s passed", s3srv.URL)
	}
	p, s := beam.NewPipelineWithRoot()
	beam.Create(s, "a")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Run(ctx, p)
	if !errors.Is(err, sink.ErrInvalidConfig) || err.Error() != want.Error() {
		t.Fatalf("Run: %v, want %q", err, want)
	}
	if got := Format(err); got != want.Error() || strings.Contains(got, "\n") {
		t.Errorf("Format: %q, want the one line %q", got, want)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d requests reached the server at --endpoint", n)
	}
}

// readmeProgram checks that the README's program (step 2 of "Use it in
// your own program") is pipelines/minimal's, which the test then builds and
// runs as the README's.
func readmeProgram(t *testing.T, root string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(readme, []byte("**2. Write the program.**"))
	if i < 0 {
		t.Fatal("the README has no step 2")
	}
	_, rest, ok := bytes.Cut(readme[i:], []byte("```go\n"))
	prog, _, ok2 := bytes.Cut(rest, []byte("```"))
	if !ok || !ok2 {
		t.Fatal("the README's step 2 has no Go block")
	}
	minimal, err := os.ReadFile(filepath.Join(root, "pipelines", "minimal", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(minimal, []byte("package main")); i < 0 || !bytes.Equal(prog, minimal[i:]) {
		t.Fatal("the README's program is not pipelines/minimal/main.go's")
	}
}

// The README's program given the S3 server's URL as --endpoint, Beam's
// flag, fails before any S3 call with the sink's line, the --s3-endpoint
// hint: no request reaches the server, not even the preflight's probes;
// with AWS as its endpoint (no --s3-endpoint), where the SDK is pointed at
// the same server, none either. The same program given the URL as
// --s3-endpoint does reach it, so the count can tell.
func TestReadmeProgramRefusesBeamEndpoint(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readmeProgram(t, root)
	bin := filepath.Join(t.TempDir(), "minimal")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(goBin, "build", "-o", bin, "./pipelines/minimal")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the README's program: %v\n%s", err, out)
	}

	s3srv, calls := beamflag.Recorder(t)
	beamflag.SetEndpoint(t, s3srv.URL)
	line := sink.CheckBeamEndpoint("").Error()
	run := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--bucket", "demo"}, args...)...)
		cmd.Env = append(os.Environ(),
			"AWS_ACCESS_KEY_ID="+s3test.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3test.SecretKey, "AWS_SESSION_TOKEN=",
			"AWS_REGION="+s3test.Region, "AWS_ENDPOINT_URL="+s3srv.URL, "AWS_ENDPOINT_URL_S3="+s3srv.URL)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		began := time.Now()
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: exit %d after %v:\n%s", args, code, time.Since(began).Round(time.Millisecond), stderr.String())
		return code, stderr.String()
	}
	for _, args := range [][]string{
		{"--endpoint", s3srv.URL},
		{"--endpoint", s3srv.URL, "--s3-endpoint", s3srv.URL},
	} {
		code, stderr := run(args...)
		if code != 3 || !strings.Contains(stderr, line) || !strings.Contains(stderr, "no data was written") {
			t.Errorf("%v: exit %d, want 3 and the line %q:\n%s", args, code, line, stderr)
		}
		if n := calls.Load(); n != 0 {
			t.Fatalf("%v: %d requests reached the S3 server", args, n)
		}
	}
	// The control: the same server as the program's S3 endpoint is asked
	// (and refuses: the preflight fails).
	if code, stderr := run("--s3-endpoint", s3srv.URL); code != 3 || calls.Load() == 0 {
		t.Errorf("with --s3-endpoint the program made no S3 call (exit %d):\n%s", code, stderr)
	}
}
