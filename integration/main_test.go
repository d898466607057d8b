package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// binDir holds the child programs, built once per test process.
var binDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "s3once-integration-bin-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// children are the programs the tests run, built together (one go build
// shares the work) the first time one is needed.
var children = []string{"pipelines/batch", "pipelines/streaming", "pipelines/minimal", "integration/internal/streamwriter", "cmd/s3once", "cmd/s3once-run"}

// build is one build of some children, once per test process, into a
// folder of binDir: plain, or with the mutant build tag.
type build struct {
	pkgs   []string
	tags   string
	folder string // below binDir; "" for binDir itself
	once   sync.Once
	dir    string
	err    error
}

var (
	plainBuild  = &build{pkgs: children}
	mutantBuild = &build{pkgs: children, tags: "s3once_mutant", folder: "s3once_mutant"}
	// lakeBuild links the Iceberg packages, which the other children do
	// not: on its own, so that they do not pay for it.
	lakeBuild = &build{pkgs: []string{"integration/internal/secretlake"}, folder: "secretlake.d"}
)

// binary returns the executable of the main package pkg (one of children),
// built without the race detector.
func binary(t testing.TB, pkg string) string {
	t.Helper()
	return plainBuild.binary(t, pkg)
}

// mutantBinary returns pkg built with the s3once_mutant tag: its mutation
// points read S3ONCE_MUTANT (see internal/mutant), which mutantEnv sets.
func mutantBinary(t testing.TB, pkg string) string {
	t.Helper()
	return mutantBuild.binary(t, pkg)
}

func (b *build) binary(t testing.TB, pkg string) string {
	t.Helper()
	b.once.Do(func() {
		b.dir = filepath.Join(binDir, b.folder)
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			goBin = "go"
		}
		args := []string{"build", "-o", b.dir + string(filepath.Separator)}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		for _, c := range b.pkgs {
			args = append(args, "./"+c)
		}
		cmd := exec.Command(goBin, args...)
		cmd.Dir = moduleRoot(t)
		var msg bytes.Buffer
		cmd.Stdout, cmd.Stderr = &msg, &msg
		began := time.Now()
		if err := cmd.Run(); err != nil {
			b.err = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, msg.String())
			return
		}
		t.Logf("built %s in %v", strings.Join(args[3:], " "), time.Since(began).Round(time.Millisecond))
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	out := filepath.Join(b.dir, filepath.Base(pkg))
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("%s was not built: %v", pkg, err)
	}
	return out
}

func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("go.mod not found above %s", dir)
		}
	}
}

// envInt reads a positive integer from the environment.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// childEnv is the environment of a child: the test credentials through the
// AWS SDK's standard chain, and nothing of the developer's own AWS set-up.
func childEnv(accessKey, secretKey string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"AWS_ACCESS_KEY_ID="+accessKey,
		"AWS_SECRET_ACCESS_KEY="+secretKey,
		"AWS_REGION="+s3test.Region,
		"AWS_CONFIG_FILE="+os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
	)
}

// child is a running child process.
type child struct {
	cmd    *exec.Cmd
	began  time.Time
	done   chan struct{}
	stdout *lockedBuffer
	stderr *lockedBuffer

	// Set when done is closed.
	state *os.ProcessState
	err   error
	ended time.Time
}

// outcome is how a child ended.
type outcome struct {
	Code     int  // exit code; -1 when killed by a signal
	Killed   bool // ended by SIGKILL: a real crash
	Elapsed  time.Duration
	Stdout   string
	Stderr   string
	TimedOut bool // the test's bound ran out and it was killed for that
}

func (o outcome) String() string {
	switch {
	case o.TimedOut:
		return fmt.Sprintf("timed out after %v", o.Elapsed.Round(time.Millisecond))
	case o.Killed:
		return fmt.Sprintf("killed after %v", o.Elapsed.Round(time.Millisecond))
	}
	return fmt.Sprintf("exit %d after %v", o.Code, o.Elapsed.Round(time.Millisecond))
}

// startChild starts bin with args and env; it is SIGKILLed by its PID when
// the test ends, and also if the test process dies.
func startChild(t testing.TB, bin string, env []string, lines func(string), args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), done: make(chan struct{}), stdout: &lockedBuffer{onLine: lines}, stderr: &lockedBuffer{}}
	c.cmd.Env = env
	c.cmd.Stdout = c.stdout
	c.cmd.Stderr = c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.began = time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		c.state = c.cmd.ProcessState
		c.ended = time.Now()
		close(c.done)
	}()
	t.Cleanup(func() { c.kill() })
	return c
}

// kill SIGKILLs the child by its PID and waits until it is reaped. It
// reports whether the child was still running when the signal was sent (a
// kill that lands after the exit is no crash).
func (c *child) kill() bool {
	select {
	case <-c.done:
		return false
	default:
	}
	err := c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
	return err == nil && c.killedBySignal()
}

func (c *child) killedBySignal() bool {
	if c.state == nil {
		return false
	}
	ws, ok := c.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// wait waits for the child to end, killing it after limit.
func (c *child) wait(limit time.Duration) outcome {
	timedOut := false
	select {
	case <-c.done:
	case <-time.After(limit):
		timedOut = c.kill()
	}
	o := outcome{Code: -1, Killed: c.killedBySignal() && !timedOut, Elapsed: c.ended.Sub(c.began),
		Stdout: c.stdout.String(), Stderr: c.stderr.String(), TimedOut: timedOut}
	if c.state != nil && c.state.Exited() {
		o.Code = c.state.ExitCode()
	}
	return o
}

// lockedBuffer collects a child's output; onLine, if set, sees each line.
type lockedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	onLine  func(string)
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf.Write(p)
	var lines []string
	if b.onLine != nil {
		b.partial = append(b.partial, p...)
		for {
			i := bytes.IndexByte(b.partial, '\n')
			if i < 0 {
				break
			}
			lines = append(lines, string(b.partial[:i]))
			b.partial = b.partial[i+1:]
		}
	}
	b.mu.Unlock()
	for _, l := range lines {
		b.onLine(l)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sameObjects fails unless got holds exactly the keys of want, each with the
// same bytes.
func sameObjects(t testing.TB, got, want map[string][]byte) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("missing object %s", k)
		case !bytes.Equal(g, w):
			t.Errorf("object %s differs: %d bytes, want %d (first difference at byte %d)", k, len(g), len(w), firstDiff(g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected object %s (%d bytes)", k, len(got[k]))
		}
	}
}

// noWrongObject fails if got holds an object that want does not, or one
// with other bytes: missing objects are allowed (a run that failed).
func noWrongObject(t testing.TB, got, want map[string][]byte) {
	t.Helper()
	for k, g := range got {
		w, ok := want[k]
		switch {
		case !ok:
			t.Errorf("unexpected object %s (%d bytes)", k, len(g))
		case !bytes.Equal(g, w):
			t.Errorf("WRONG object %s: %d bytes, want %d (first difference at byte %d)", k, len(g), len(w), firstDiff(g, w))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// sweepAndCheckClean sweeps everything the runs left (a cutoff of now covers
// all of it), then fails if any multipart upload or side object remains.
func sweepAndCheckClean(t testing.TB, c *s3.Client, bucket, prefix string) committer.SweepReport {
	t.Helper()
	cm, err := committer.New(c, committer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := cm.Sweep(ctx, committer.SweepOptions{Bucket: bucket, Prefix: prefix, Cutoff: time.Now(), Force: true})
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	checkClean(t, c, bucket)
	return rep
}

// checkClean fails if any multipart upload or staging object is in bucket.
func checkClean(t testing.TB, c *s3.Client, bucket string) {
	t.Helper()
	if ups := s3test.Uploads(t, c, bucket); len(ups) > 0 {
		t.Errorf("%d multipart uploads left: %v", len(ups), ups)
	}
	if left := s3test.Keys(t, c, bucket, ".s3once/"); len(left) > 0 {
		t.Errorf("%d side objects left: %v", len(left), left)
	}
}

// errorsIsAny is errors.Is over several targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// verifyFolder runs `s3once verify` on bucket/prefix against endpoint and
// returns its JSON report; it fails the test unless the folder verifies
// (exit code 0).
func verifyFolder(t testing.TB, endpoint, bucket, prefix string, extra ...string) map[string]any {
	t.Helper()
	out, code := runVerify(t, endpoint, bucket, prefix, extra...)
	if code != 0 {
		t.Fatalf("s3once verify s3://%s/%s exited %d:\n%s", bucket, prefix, code, out)
	}
	var rep map[string]any
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("s3once verify --json: %v\n%s", err, out)
	}
	return rep
}

// runVerify runs `s3once verify --json` (with extra flags) and returns its
// output and exit code.
func runVerify(t testing.TB, endpoint, bucket, prefix string, extra ...string) ([]byte, int) {
	t.Helper()
	args := append([]string{"verify", "--json", "--bucket", bucket, "--prefix", prefix,
		"--s3-endpoint", endpoint, "--path-style", "--region", s3test.Region}, extra...)
	cmd := exec.Command(binary(t, "cmd/s3once"), args...)
	cmd.Env = childEnv(s3test.AccessKey, s3test.SecretKey)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.Bytes(), 0
	case errors.As(err, &exit):
		return append(stdout.Bytes(), stderr.Bytes()...), exit.ExitCode()
	}
	t.Fatalf("s3once verify: %v\n%s", err, stderr.String())
	return nil, -1
}
