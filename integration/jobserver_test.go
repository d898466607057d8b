package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// The job-server path (--runner=universal --endpoint=...), the one Flink
// and Spark users take, on Beam's standalone prism job server: the examples
// are submitted to it from a process of their own, and their DoFns run in
// worker processes of their own (a PROCESS environment whose boot program
// fetches the staged pipeline binary and runs it in worker mode). The
// workers rebuild every DoFn from its JSON, run the init-time registrations
// of the binary, and find their AWS credentials in their own environment.
// The output must equal, byte for byte, that of a run on the embedded
// runner.
func TestJobServer(t *testing.T) {
	t.Parallel()
	batch := binary(t, "pipelines/batch")
	streaming := binary(t, "pipelines/streaming")
	prism, boot := jobServerBinaries(t)
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	js := startJobServer(t, prism, env)

	cases := []struct {
		name   string
		job    string // the program's name in its summary
		bin    string
		prefix string
		args   []string
	}{
		{"batch", "batch", batch, "corpus", []string{"--records", "6000", "--topics", "2", "--shards", "2",
			"--checkpoint-bytes", "65536", "--inline-tail-max", "-1", "--seed", "13"}},
		{"streaming", "streaming", streaming, "events", []string{"--records", "6000", "--span", "30m", "--window", "10m",
			"--checkpoint-bytes", "65536", "--seed", "5"}},
		// Automatic sharding: the counts follow each topic's bytes, and
		// the job server's workers, bundling otherwise, get the same.
		{"batch, automatic shards", "batch", batch, "auto", []string{"--records", "6000", "--topics", "3",
			"--target-file-bytes", "32768", "--seed", "17"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			common := append([]string{"--s3-endpoint", srv.Endpoint(), "--prefix", tc.prefix, "--timeout", "3m"}, tc.args...)

			embedded := srv.Bucket(t)
			ref := startChild(t, tc.bin, env, nil, append([]string{"--bucket", embedded}, common...)...).wait(4 * time.Minute)
			if ref.Code != 0 {
				t.Fatalf("run on the embedded runner: %v\n%s", ref, ref.Stderr)
			}
			want := s3test.Objects(t, client, embedded, tc.prefix+"/")
			if len(want) == 0 {
				t.Fatal("the run on the embedded runner wrote nothing")
			}
			if slices.Contains(tc.args, "--target-file-bytes") {
				checkAutoShards(t, want, s3test.Object(t, client, embedded, tc.prefix+"/_s3once_settings"))
			}

			bucket := srv.Bucket(t)
			booted, logged := js.boots(), len(js.output())
			o := startChild(t, tc.bin, env, nil, append(append([]string{"--bucket", bucket}, common...), js.flags(tc.bin, boot)...)...).wait(4 * time.Minute)
			if o.Code != 0 {
				t.Fatalf("run on the job server: %v\n%s\njob server:\n%s", o, o.Stderr, js.output())
			}
			sameObjects(t, s3test.Objects(t, client, bucket, tc.prefix+"/"), want)

			// The DoFns ran in workers the boot program started, not in the
			// submitting process: it collected no result itself, and its
			// summary counts the files from the metrics the job server
			// gathered from the workers.
			if n := js.boots() - booted; n < 1 {
				t.Errorf("no worker was booted for the job; job server:\n%s", js.output())
			}
			if !strings.Contains(o.Stdout, "committed on remote workers") {
				t.Errorf("the submitting process ran DoFns itself (its summary lists files); stdout:\n%s", o.Stdout)
			}
			if head := fmt.Sprintf("s3once %s: %d files committed", tc.job, len(want)); !strings.Contains(o.Stdout, head) {
				t.Errorf("the summary does not say %q; stdout:\n%s", head, o.Stdout)
			}
			// A good job logs no ERROR line the docs do not explain
			// (docs/engines.md, "A job server"): the submitter none, the
			// job server, in what it logged during this job, only prism's
			// report of the workers it killed at the job's end.
			if e := errorLines(o.Stderr + o.Stdout); len(e) > 0 {
				t.Errorf("the submitting program logged %d ERROR lines on a good job:\n%s", len(e), strings.Join(e, "\n"))
			}
			for _, l := range errorLines(js.output()[logged:]) {
				if !explainedJobServerError(l) {
					t.Errorf("the job server logged an ERROR line the docs do not explain:\n%s", l)
				}
			}
			sweepAndCheckClean(t, client, bucket, tc.prefix+"/")
			// The boot program removed the staged binary as soon as the
			// worker ran from it, even if the job server killed it since.
			if big := js.largeFiles(t, 1<<20); len(big) > 0 {
				t.Errorf("the job server's temporary folder keeps %v", big)
			}
			t.Logf("%d files, byte-exact; embedded %v, job server %v", len(want), ref, o)
		})
	}

	// The workers' S3 clients take the credentials of the workers' own
	// environment, never the submitting program's: with a wrong secret
	// there, the job fails (the preflight, on the submitting side with the
	// right one, passes), and nothing is written.
	t.Run("workers' own credentials", func(t *testing.T) {
		wrong := startJobServer(t, prism, childEnv(s3test.AccessKey, "not-the-secret"))
		bucket := srv.Bucket(t)
		o := startChild(t, batch, env, nil, append([]string{"--bucket", bucket, "--s3-endpoint", srv.Endpoint(), "--timeout", "3m",
			"--records", "2000", "--topics", "1", "--shards", "1"}, wrong.flags(batch, boot)...)...).wait(4 * time.Minute)
		if o.Code != 1 {
			t.Fatalf("run with wrong credentials on the workers: %v, want exit 1\n%s\njob server:\n%s", o, o.Stderr, wrong.output())
		}
		if !strings.Contains(o.Stderr, "SignatureDoesNotMatch") {
			t.Errorf("the error does not name the workers' refused signature:\n%s", o.Stderr)
		}
		if wrong.boots() < 1 {
			t.Errorf("no worker was booted; job server:\n%s", wrong.output())
		}
		if keys := s3test.Keys(t, client, bucket, ""); len(keys) > 0 {
			t.Errorf("%d objects written: %v", len(keys), keys)
		}
		checkClean(t, client, bucket)
	})
}

// shardCount is the shard count in a file's name.
var shardCount = regexp.MustCompile(`-shard-[0-9]{5}-of-([0-9]{5})`)

// checkAutoShards checks that the folder's settings marker (marker)
// records
// automatic sharding, and that it gave each partition one shard count, more
// than 1 (each topic's bytes call for several).
func checkAutoShards(t *testing.T, objs map[string][]byte, marker []byte) {
	t.Helper()
	counts := map[string]string{} // partition folder -> count
	for k := range objs {
		m := shardCount.FindStringSubmatch(k)
		if m == nil {
			continue // the settings marker, manifests
		}
		dir := path.Dir(k)
		if c, ok := counts[dir]; ok && c != m[1] {
			t.Errorf("%s holds files named for %s and %s shards", dir, c, m[1])
		}
		counts[dir] = m[1]
	}
	if len(counts) == 0 {
		t.Fatal("no file of the run is named for a shard count")
	}
	for dir, c := range counts {
		if c == "00001" {
			t.Errorf("%s: 1 shard, where its bytes call for more", dir)
		}
	}
	if !strings.Contains(string(marker), "\nshards=auto:") {
		t.Errorf("the settings marker does not record automatic sharding:\n%s", marker)
	}
	t.Logf("shard counts per partition: %v", counts)
}

var (
	jobServerBuild    sync.Once
	jobServerBuildErr error
)

// jobServerBinaries builds Beam's standalone prism job server, from the
// Beam module in go.mod, and the workers' boot program, without the race
// detector.
func jobServerBinaries(t testing.TB) (prism, boot string) {
	t.Helper()
	jobServerBuild.Do(func() {
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			goBin = "go"
		}
		args := []string{"build", "-o", binDir + string(filepath.Separator),
			"github.com/apache/beam/sdks/v2/go/cmd/prism", "./integration/internal/workerboot"}
		cmd := exec.Command(goBin, args...)
		cmd.Dir = moduleRoot(t)
		var msg bytes.Buffer
		cmd.Stdout, cmd.Stderr = &msg, &msg
		began := time.Now()
		if err := cmd.Run(); err != nil {
			jobServerBuildErr = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, msg.String())
			return
		}
		t.Logf("built prism and workerboot in %v", time.Since(began).Round(time.Millisecond))
	})
	if jobServerBuildErr != nil {
		t.Fatal(jobServerBuildErr)
	}
	return filepath.Join(binDir, "prism"), filepath.Join(binDir, "workerboot")
}

// jobServer is a prism job server process.
type jobServer struct {
	endpoint string // host:port to dial, on 127.0.0.1
	tmp      string // its $TMPDIR, where the boot program fetches

	mu     sync.Mutex
	out    bytes.Buffer // its log and its workers' output
	booted int          // workers the boot program started
}

// largeFiles lists the regular files of at least min bytes under the job
// server's temporary folder.
func (js *jobServer) largeFiles(t testing.TB, min int64) []string {
	t.Helper()
	var big []string
	err := filepath.WalkDir(js.tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if info, err := d.Info(); err == nil && info.Size() >= min {
			big = append(big, fmt.Sprintf("%s (%d bytes)", p, info.Size()))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", js.tmp, err)
	}
	return big
}

// servingLine is prism's log line naming the job endpoint it listens on
// (on every interface; the port is the kernel's choice with --job_port=0).
var servingLine = regexp.MustCompile(`msg="Serving JobManagement" endpoint=[^:\s]*:(\d+)`)

// bootLine is the boot program's line for each worker it starts.
var bootLine = regexp.MustCompile(`^workerboot: worker .*: running staged binary `)

// startJobServer starts prism with env (the workers inherit it, as a
// Flink task manager's workers inherit the task manager's environment) and
// waits until it names its endpoint. It is SIGKILLed by its PID when the
// test ends. Everything the workers fetch lives in a temporary folder of
// the test.
func startJobServer(t testing.TB, bin string, env []string) *jobServer {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command(bin, "--job_port=0", "--serve_http=false", "--log_kind=text", "--log_level=info")
	cmd.Env = append(slices.Clip(env), "TMPDIR="+tmp)
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Its workers inherit its output: do not wait for them past its end.
	cmd.WaitDelay = 5 * time.Second
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the job server: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		w.Close()
		close(done)
	}()
	js := &jobServer{tmp: tmp}
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			js.mu.Lock()
			js.out.WriteString(line + "\n")
			if bootLine.MatchString(line) {
				js.booted++
			}
			js.mu.Unlock()
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case port <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	})
	select {
	case p := <-port:
		js.endpoint = "127.0.0.1:" + p
	case <-done:
		t.Fatalf("the job server exited before naming its endpoint:\n%s", js.output())
	case <-time.After(time.Minute):
		t.Fatalf("the job server named no endpoint within a minute:\n%s", js.output())
	}
	return js
}

// flags are the Beam flags that submit a pipeline binary to the job server
// and run its DoFns in worker processes that boot starts from the staged
// binary.
func (js *jobServer) flags(pipeline, boot string) []string {
	return []string{
		"--runner=universal",
		"--endpoint=" + js.endpoint,
		"--worker_binary=" + pipeline,
		"--environment_type=PROCESS",
		fmt.Sprintf(`--environment_config={"command":%q}`, boot),
	}
}

// boots is how many workers the boot program has started so far.
func (js *jobServer) boots() int {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.booted
}

// output is what the job server and its workers printed so far.
func (js *jobServer) output() string {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.out.String()
}

// explainedJobServerError reports whether an ERROR line of the job server is
// one docs/engines.md explains: prism killing a worker's boot program when
// the job ends.
func explainedJobServerError(line string) bool {
	return strings.Contains(line, `msg="process failed while running"`) && strings.Contains(line, `error="signal: killed"`)
}
