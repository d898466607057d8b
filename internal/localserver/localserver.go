// Package localserver starts and stops a real S3 server on loopback: versitygw
// by default, or MinIO (Options.Kind), on 127.0.0.1 and a free port, with a
// temporary root (or the caller's) and fixed keys. A server can be SIGKILLed
// and restarted (for versitygw, after repairing the multipart uploads
// versitygw v1.8.0 strands when it dies inside CompleteMultipartUpload), and
// it is always stopped by its own PID, never by name.
//
// It does not import testing, so a shipped program can use it: `make run`
// (cmd/s3once-run) starts its local server with it. Tests use package
// s3test, which builds on this package, stops the server when the test ends
// and adds the helpers that read a bucket.
//
// The binaries are found in $S3ONCE_BIN (set by the Makefile) or in the
// repository's .bin folder; `make tools` installs them there. MinIO is
// AGPL-3.0: it is built as a test tool only, never a Go dependency of
// s3once.
package localserver

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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Fixed credentials of every server this package starts.
const (
	AccessKey = "s3once-test-access"
	SecretKey = "s3once-test-secret-key"
	Region    = "us-east-1"
)

// The environment variables Export sets, which a sink.Config's Credentials
// names to reach these servers: the pipeline graph then carries their
// names, never the keys.
const (
	AccessKeyEnv = "S3ONCE_LOCAL_ACCESS_KEY_ID"
	SecretKeyEnv = "S3ONCE_LOCAL_SECRET_ACCESS_KEY"
)

// Export sets AccessKeyEnv and SecretKeyEnv in this process's environment,
// which its children (worker processes among them) inherit.
func Export() error {
	if err := os.Setenv(AccessKeyEnv, AccessKey); err != nil {
		return err
	}
	return os.Setenv(SecretKeyEnv, SecretKey)
}

// Kind names an S3 server implementation.
type Kind string

// The servers this package runs. Versitygw is the default; MinIO is the
// second, independent implementation (package s3test's documentation says
// how the two differ).
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
	// Root is the data folder; empty means a fresh temporary folder, made
	// under TempDir and removed by Stop.
	Root string
	// TempDir is where the fresh temporary root is made when Root is empty;
	// empty means the system's temporary folder. The benchmarks point it at
	// a RAM-backed folder.
	TempDir string
	// KeepAlive lets versitygw keep a client's connection open between
	// requests, as S3 and MinIO do; without it versitygw answers every
	// request with "Connection: close", so each request dials anew. The
	// benchmarks set it, so that they do not measure connection setup that
	// a client of S3 does not pay; the tests leave it off.
	KeepAlive bool
	// Port, if set, is the loopback port to listen on (a fixed address a
	// person can type); 0 takes a free one.
	Port int
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
	return "", fmt.Errorf("localserver: %s not found in %v: run `make tools` (or `make test`) first", name, dirs)
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
			return "", errors.New("localserver: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Launch starts a server. The caller must call Stop; package s3test's Start
// does so when the test that started it ends.
func Launch(opts Options) (*Server, error) {
	root := opts.Root
	if root == "" {
		d, err := os.MkdirTemp(opts.TempDir, "s3once-s3-*")
		if err != nil {
			return nil, fmt.Errorf("localserver: temp root: %w", err)
		}
		root = d
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("localserver: root: %w", err)
	}
	kind := opts.Kind
	if kind == "" {
		kind = Versitygw
	}
	if kind != Versitygw && kind != MinIO {
		return nil, fmt.Errorf("localserver: unknown server kind %q", kind)
	}
	if kind != Versitygw && opts.MaxParts > 0 {
		return nil, fmt.Errorf("localserver: MaxParts needs versitygw, not %s", kind)
	}
	if kind != MinIO && opts.KMSSecretKey != "" {
		return nil, fmt.Errorf("localserver: KMSSecretKey needs minio, not %s", kind)
	}
	port := opts.Port
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	} else if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		return nil, fmt.Errorf("localserver: port %d is taken (another server, or an earlier one still running): %w", port, err)
	} else {
		l.Close()
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
		return 0, fmt.Errorf("localserver: free port: %w", err)
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
		if s.opts.KeepAlive {
			args = append(args, "--keep-alive")
		}
		args = append(args, "posix", s.root)
	}
	logf, err := os.OpenFile(s.logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("localserver: log file: %w", err)
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
		return fmt.Errorf("localserver: start %s: %w", s.kind, err)
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
			return fmt.Errorf("localserver: %s exited at start: %s", s.kind, tail(b))
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
	return fmt.Errorf("localserver: %s not ready on %s within %v: %s", s.kind, s.addr, startTimeout, tail(b))
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
		return fmt.Errorf("localserver: repair glob: %w", err)
	}
	for _, m := range matches {
		base := filepath.Base(m)
		orig := filepath.Join(filepath.Dir(m), strings.SplitN(base, ".", 2)[0])
		if _, err := os.Stat(orig); err == nil {
			// Both exist: keep the original, drop the stranded copy.
			if err := os.RemoveAll(m); err != nil {
				return fmt.Errorf("localserver: repair %s: %w", m, err)
			}
			continue
		}
		if err := os.Rename(m, orig); err != nil {
			return fmt.Errorf("localserver: repair %s: %w", m, err)
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

// NewBucket creates a new uniquely named bucket.
func (s *Server) NewBucket(ctx context.Context) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t-" + hex.EncodeToString(b[:])
	_, err := s.Client(ClientOptions{MaxAttempts: 3}).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("localserver: create bucket %s: %w", name, err)
	}
	return name, nil
}
