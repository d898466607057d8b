// Package s3test runs a real S3 server for tests: on 127.0.0.1, on a free
// port, with a temporary root and fixed keys. Each test gets its own bucket,
// made with a PUT. The server is versitygw by default, or MinIO
// (Options.Kind), a second, independent implementation. It can be SIGKILLed
// and restarted (for versitygw, after repairing the multipart uploads
// versitygw v1.8.0 strands when it dies inside CompleteMultipartUpload), and
// it is always stopped by its own PID when the test that started it ends.
//
// The binaries are found in $S3ONCE_BIN (set by the Makefile) or in the
// repository's .bin folder; `make test` installs them there. MinIO is
// AGPL-3.0: it is built as a test tool only, never a Go dependency of
// s3once.
//
// # How MinIO differs from versitygw
//
// Observed with MinIO v0.0.0-20260212201848-7aac2a2c5b7c and versitygw
// v1.8.0; TestMinIOBehaviour and TestMinIOKMSETags fail when MinIO changes.
//
//   - Conditional completes: both answer 412 PreconditionFailed to
//     CompleteMultipartUpload with If-None-Match: * over an existing key.
//     s3once relies on it as on AWS.
//   - Checksum types: both take CRC64NVME parts in a FULL_OBJECT upload and
//     return the full-object CRC64NVME on HEAD with checksum mode (type
//     FULL_OBJECT on MinIO). Both list each part's CRC64NVME in ListParts,
//     so parts are identified by number, size and checksum on both.
//   - An empty file: MinIO refuses to complete an upload of one zero-byte
//     part when the request carries the zero-byte full-object CRC64NVME
//     (AAAAAAAAAAA=) and MpuObjectSize 0: 400 XAmzContentChecksumMismatch,
//     "The provided 'x-amz-checksum' header does not match what was
//     computed". The same complete without the full-object checksum
//     succeeds. versitygw takes both. The committer (and the conformance
//     suite's completion) leaves the full-object checksum out for an empty
//     file and checks the object at the key afterwards (recoverable
//     TestConformanceMinIO/EmptyFile, committer TestOnMinIO/CommitEmptyFile).
//   - Aborting a completed upload: MinIO answers 204, as if it aborted
//     something; versitygw (and AWS) answer 404 NoSuchUpload. The committer
//     therefore looks at the upload (ListParts) before it aborts one on its
//     already-committed path and reports UploadAborted only for an upload
//     it saw open (committer TestOnMinIO/CommitTwice,
//     TestUploadAbortedOnlyWhenOpen).
//   - Listing uploads: MinIO's ListMultipartUploads matches Prefix only as a
//     whole key: "dir/" lists none of the uploads under dir/, "dir/a" lists
//     dir/a's, and no prefix lists all. versitygw filters by prefix as AWS
//     does. The sweep therefore lists without a prefix, from the folder's
//     name on (KeyMarker, which both honour), and filters keys itself
//     (committer TestOnMinIO/SweepRemovesExactlyTheStale,
//     SweepOlderThanByServerClock, TestSweepListsOnlyItsFolders).
//   - SSE-KMS: MinIO started with a static key (MINIO_KMS_SECRET_KEY,
//     Options.KMSSecretKey) encrypts parts uploaded with
//     x-amz-server-side-encryption: aws:kms, and their ETags are not MD5s of
//     the bytes; the same bytes uploaded again get another ETag, as on AWS.
//     versitygw has no KMS. So MinIO can host a real-server test of
//     ETags that are not content, beside the fault wrapper's random ETags.
//   - Layout: versitygw keeps bucket/key at Root/bucket/key, which some
//     tests read or damage directly; MinIO keeps its own format there, so
//     those tests run on versitygw only. MaxParts (a lower part ceiling) is
//     versitygw only.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Fixed credentials of every test server.
const (
	AccessKey = "s3once-test-access"
	SecretKey = "s3once-test-secret-key"
	Region    = "us-east-1"
)

// Kind names an S3 server implementation.
type Kind string

// The servers the tests run. Versitygw is the default; MinIO is the second,
// independent implementation (see minio.go).
const (
	Versitygw Kind = "versitygw"
	MinIO     Kind = "minio"
)

// Options tune a server.
type Options struct {
	// Kind picks the server; empty means Versitygw.
	Kind Kind
	// MaxParts lowers the server's multipart part ceiling (versitygw
	// --mp-max-parts); 0 keeps S3's 10,000. Versitygw only.
	MaxParts int
	// Root is the data folder; empty means a fresh temporary folder.
	Root string
	// KMSSecretKey, for MinIO, is a static KMS key ("name:base64 of 32
	// bytes", MINIO_KMS_SECRET_KEY), which enables SSE-KMS.
	KMSSecretKey string
}

// Server is one server process. Its methods are safe for concurrent use.
type Server struct {
	opts Options
	kind Kind
	root string
	addr string // host:port, fixed across restarts
	logs string
	// console is MinIO's console listener, fixed across restarts.
	console string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Binary returns the path of the versitygw executable, or an error telling how to
// install it.
func Binary() (string, error) {
	return tool("versitygw")
}

// tool finds an executable the Makefile installs into the repository's .bin.
func tool(name string) (string, error) {
	var dirs []string
	if d := os.Getenv("S3ONCE_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if root, err := repoRoot(); err == nil {
		dirs = append(dirs, filepath.Join(root, ".bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("s3test: %s not found in %v: run `make tools` (or `make test`) first", name, dirs)
}

// Tool returns the path of another executable the Makefile installs
// (toxiproxy-server, benchstat).
func Tool(name string) (string, error) { return tool(name) }

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("s3test: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Start starts a server for the test and stops it (by PID) when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Launch(opts)
	if err != nil {
		t.Fatalf("start S3 server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch starts a server outside a test (TestMain, `make run`). The caller must
// call Stop.
func Launch(opts Options) (*Server, error) {
	root := opts.Root
	if root == "" {
		d, err := os.MkdirTemp("", "s3once-s3-*")
		if err != nil {
			return nil, fmt.Errorf("s3test: temp root: %w", err)
		}
		root = d
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("s3test: root: %w", err)
	}
	kind := opts.Kind
	if kind == "" {
		kind = Versitygw
	}
	if kind != Versitygw && kind != MinIO {
		return nil, fmt.Errorf("s3test: unknown server kind %q", kind)
	}
	if kind != Versitygw && opts.MaxParts > 0 {
		return nil, fmt.Errorf("s3test: MaxParts needs versitygw, not %s", kind)
	}
	if kind != MinIO && opts.KMSSecretKey != "" {
		return nil, fmt.Errorf("s3test: KMSSecretKey needs minio, not %s", kind)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts: opts,
		kind: kind,
		root: root,
		addr: fmt.Sprintf("127.0.0.1:%d", port),
		logs: filepath.Join(os.TempDir(), fmt.Sprintf("s3once-%s-%d.log", kind, port)),
	}
	if kind == MinIO {
		cport, err := FreePort()
		if err != nil {
			return nil, err
		}
		s.console = fmt.Sprintf("127.0.0.1:%d", cport)
	}
	if err := s.start(); err != nil {
		if opts.Root == "" {
			_ = os.RemoveAll(root)
		}
		return nil, err
	}
	return s, nil
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("s3test: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	bin, err := tool(string(s.kind))
	if err != nil {
		return err
	}
	var args, env []string
	ready := "http://" + s.addr + "/"
	switch s.kind {
	case MinIO:
		args = []string{"server", s.root, "--address", s.addr, "--console-address", s.console, "--quiet"}
		env = append(os.Environ(),
			"MINIO_ROOT_USER="+AccessKey,
			"MINIO_ROOT_PASSWORD="+SecretKey,
			"MINIO_BROWSER=off",
			"MINIO_UPDATE=off",
		)
		if s.opts.KMSSecretKey != "" {
			env = append(env, "MINIO_KMS_SECRET_KEY="+s.opts.KMSSecretKey)
		}
		// 200 once the server takes S3 requests.
		ready = "http://" + s.addr + "/minio/health/ready"
	default:
		args = []string{
			"--access", AccessKey, "--secret", SecretKey, "--region", Region,
			"--port", s.addr, "--quiet",
		}
		if s.opts.MaxParts > 0 {
			args = append(args, "--mp-max-parts", fmt.Sprint(s.opts.MaxParts))
		}
		args = append(args, "posix", s.root)
	}
	logf, err := os.OpenFile(s.logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("s3test: log file: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Its own process group, so a SIGKILL of the test binary's group does not
	// decide for us; we always stop it by PID.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("s3test: start %s: %w", s.kind, err)
	}
	logf.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	// MinIO takes a few seconds on a busy machine; 60 s leaves room.
	const startTimeout = 60 * time.Second
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			b, _ := os.ReadFile(s.logs)
			return fmt.Errorf("s3test: %s exited at start: %s", s.kind, tail(b))
		default:
		}
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
			if s.kind != MinIO {
				return nil
			}
			// MinIO's health check can pass before its object layer takes
			// requests (503 XMinioServerNotInitialized): wait for a signed
			// call to succeed too.
			if resp.StatusCode == http.StatusOK {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := s.Client(ClientOptions{}).ListBuckets(ctx, &s3.ListBucketsInput{})
				cancel()
				if err == nil {
					return nil
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.kill()
	b, _ := os.ReadFile(s.logs)
	return fmt.Errorf("s3test: %s not ready on %s within %v: %s", s.kind, s.addr, startTimeout, tail(b))
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Endpoint is the server's base URL.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Root is the server's data folder. On versitygw, bucket/key maps to
// Root/bucket/key; MinIO keeps its own layout there.
func (s *Server) Root() string { return s.root }

// Kind is the server's implementation.
func (s *Server) Kind() Kind { return s.kind }

// PID of the running server process, or 0.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Kill SIGKILLs the server and waits until it is gone.
func (s *Server) Kill() {
	s.kill()
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	// Wait for the port to be released (the Wait goroutine reaps the child).
	for i := 0; i < 2000; i++ {
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Restart repairs what a SIGKILL may have stranded and starts the server again
// on the same address and root.
func (s *Server) Restart() error {
	s.kill()
	if s.kind == Versitygw {
		if err := RepairInProgress(s.root); err != nil {
			return err
		}
	}
	return s.start()
}

// Stop kills the server. The temporary root stays for post-mortem reading only
// when the caller chose the root; otherwise it is removed.
func (s *Server) Stop() {
	s.kill()
	if s.opts.Root == "" {
		_ = os.RemoveAll(s.root)
	}
	_ = os.Remove(s.logs)
}

// RepairInProgress undoes versitygw v1.8.0's stranded CompleteMultipartUpload:
// a SIGKILL during Complete leaves <bucket>/.sgwtmp/multipart/*/*.inprogress
// folders and the upload vanishes from listings; renaming each back to the part
// of its name before the first dot restores the upload.
func RepairInProgress(root string) error {
	matches, err := filepath.Glob(filepath.Join(root, "*", ".sgwtmp", "multipart", "*", "*.inprogress*"))
	if err != nil {
		return fmt.Errorf("s3test: repair glob: %w", err)
	}
	for _, m := range matches {
		base := filepath.Base(m)
		orig := filepath.Join(filepath.Dir(m), strings.SplitN(base, ".", 2)[0])
		if _, err := os.Stat(orig); err == nil {
			// Both exist: keep the original, drop the stranded copy.
			if err := os.RemoveAll(m); err != nil {
				return fmt.Errorf("s3test: repair %s: %w", m, err)
			}
			continue
		}
		if err := os.Rename(m, orig); err != nil {
			return fmt.Errorf("s3test: repair %s: %w", m, err)
		}
	}
	return nil
}

// ClientOptions tune Client.
type ClientOptions struct {
	// MaxAttempts is the SDK retryer's attempt count; 0 means 1 (no SDK
	// retries), so injected faults reach the code under test.
	MaxAttempts int
	// HTTPClient replaces the default transport (e.g. to point at a proxy).
	HTTPClient *http.Client
	// Endpoint overrides the server's endpoint (e.g. a toxiproxy listener).
	Endpoint string
}

// Client returns an S3 client for the server with path-style addressing.
func (s *Server) Client(o ClientOptions) *s3.Client {
	ep := o.Endpoint
	if ep == "" {
		ep = s.Endpoint()
	}
	return NewClient(ep, o)
}

// NewClient returns an S3 client for any endpoint with the test credentials.
func NewClient(endpoint string, o ClientOptions) *s3.Client {
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = 1
	}
	return s3.New(s3.Options{
		Region:           Region,
		BaseEndpoint:     aws.String(endpoint),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		RetryMaxAttempts: attempts,
		HTTPClient:       httpClient(o.HTTPClient),
	})
}

func httpClient(c *http.Client) s3.HTTPClient {
	if c != nil {
		return c
	}
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// Bucket creates a new uniquely named bucket for the test.
func (s *Server) Bucket(t testing.TB) string {
	t.Helper()
	name, err := s.NewBucket(context.Background())
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return name
}

// NewBucket creates a new uniquely named bucket.
func (s *Server) NewBucket(ctx context.Context) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t-" + hex.EncodeToString(b[:])
	_, err := s.Client(ClientOptions{MaxAttempts: 3}).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("s3test: create bucket %s: %w", name, err)
	}
	return name, nil
}
