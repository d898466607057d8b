package sink

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// Environment of the child pipeline.
const (
	childBucketEnv = "S3ONCE_SINK_CHILD_BUCKET"
	childPrefixEnv = "S3ONCE_SINK_CHILD_PREFIX"
)

// crashPipelineConfig is the pipeline TestCrashRerun runs in a child.
func crashPipelineConfig(bucket, prefix string) Config {
	cfg := testConfig(bucket, prefix)
	cfg.Format = "jsonl"
	cfg.Compression = "gzip"
	cfg.Destination = countryOf
	cfg.Shards = 4
	cfg.MaxFileBytes = 32 << 10
	cfg.CheckpointBytes = 8 << 10
	return cfg
}

// TestCrashRerunChild is the child's pipeline; it runs only in a child.
func TestCrashRerunChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs as TestCrashRerun's child")
	}
	p, s := beam.NewPipelineWithRoot()
	Write(s, beam.CreateList(s, orders(15_000, 8)), crashPipelineConfig(os.Getenv(childBucketEnv), os.Getenv(childPrefixEnv)))
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}

// runChild runs the child pipeline into prefix, and SIGKILLs it after
// killAfter when that is positive. It returns how long the child ran.
func runChild(t *testing.T, bucket, prefix string, killAfter time.Duration) time.Duration {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRerunChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+endpoint, childBucketEnv+"="+bucket, childPrefixEnv+"="+prefix)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if killAfter > 0 {
		select {
		case err := <-done:
			t.Logf("the child finished (%v) before it could be killed", err)
			return time.Since(start)
		case <-time.After(killAfter):
			_ = cmd.Process.Kill() // SIGKILL, by PID
			<-done
			return time.Since(start)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("child pipeline: %v\n%s", err, tailOf(out.Bytes()))
	}
	return time.Since(start)
}

func tailOf(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}

// TestCrashRerun runs a batch pipeline in a child process, SIGKILLs it at a
// random point, runs it again to completion, and checks that the objects are
// those of an uninterrupted run, name for name and byte for byte, and that a
// sweep then leaves nothing behind.
func TestCrashRerun(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("parent only")
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	bucket := srv.Bucket(t)
	c := testClient()
	full := runChild(t, bucket, "ref", 0)
	ref := relative(t, c, bucket, "ref")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	kill := time.Duration(float64(full) * (0.2 + 0.7*r.Float64()))
	runChild(t, bucket, "crash", kill)
	partial := len(relative(t, c, bucket, "crash"))
	runChild(t, bucket, "crash", 0)
	got := relative(t, c, bucket, "crash")
	if len(got) != len(ref) {
		t.Fatalf("%d files after the rerun, %d in the uninterrupted run", len(got), len(ref))
	}
	for k, v := range ref {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("%s differs from the uninterrupted run", k)
		}
	}
	t.Logf("killed after %v of %v with %d of %d files committed; the rerun completed them", kill.Round(time.Millisecond), full.Round(time.Millisecond), partial, len(ref))
	sweep(t, c, bucket)
	checkClean(t, c, bucket)
}
