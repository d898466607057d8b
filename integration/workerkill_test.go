package integration

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// workerPid is the boot program's line for a worker, with its pid.
var workerPid = regexp.MustCompile(`(?m)^workerboot: worker .*: running staged binary .* as pid (\d+)$`)

// workerKillTimeout bounds each attempt of the worker-kill loop (the
// example's --timeout): prism does not retry bundles, and a job whose
// worker died may wait for it; the attempt then ends in this timeout.
const workerKillTimeout = 90 * time.Second

// killAttempt is one submission of the job in the worker-kill loop.
type killAttempt struct {
	killAt  time.Duration // after the worker booted; 0: no kill planned
	killed  bool          // a worker was running and was killed
	outcome string        // "success", "failure" or "timeout"
	elapsed time.Duration
}

func (a killAttempt) String() string {
	switch {
	case a.killAt == 0:
		return fmt.Sprintf("no kill: %s after %v", a.outcome, a.elapsed.Round(time.Millisecond))
	case !a.killed:
		return fmt.Sprintf("kill at %v came after the worker ended: %s after %v", a.killAt.Round(time.Millisecond), a.outcome, a.elapsed.Round(time.Millisecond))
	}
	return fmt.Sprintf("worker killed %v after it booted: %s after %v", a.killAt.Round(time.Millisecond), a.outcome, a.elapsed.Round(time.Millisecond))
}

// TestWorkerKillLoop: the batch example on the prism job server, whose
// worker process (not the submitting program, not the job server) is
// SIGKILLed at a random moment of the job, once or twice; the job is
// submitted again until it succeeds, each attempt under --timeout. Each
// attempt's kill time and outcome (failure, timeout or success) is
// reported. The files must then be byte-identical to those of an
// uninterrupted run on the embedded runner, so every record is in them
// exactly once; a file an attempt committed before it died is kept, never
// committed again; and a sweep leaves nothing behind.
// S3ONCE_WORKER_KILL_LOOPS sets the number of loops (make soak: 20).
func TestWorkerKillLoop(t *testing.T) {
	loops := envInt("S3ONCE_WORKER_KILL_LOOPS", 3)
	base := crashSeed()
	batch := binary(t, "pipelines/batch")
	prism, boot := jobServerBinaries(t)
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	args := []string{"--s3-endpoint", srv.Endpoint(), "--prefix", outPrefix, "--records", "6000", "--topics", "2", "--shards", "2",
		"--checkpoint-bytes", "65536", "--inline-tail-max", "-1", "--seed", "13"}

	embedded := srv.Bucket(t)
	ref := startChild(t, batch, env, nil, append([]string{"--bucket", embedded, "--timeout", "4m"}, args...)...).wait(5 * time.Minute)
	if ref.Code != 0 {
		t.Fatalf("run on the embedded runner: %v\n%s", ref, ref.Stderr)
	}
	want := s3test.Objects(t, client, embedded, outPrefix+"/")
	if len(want) == 0 {
		t.Fatal("the run on the embedded runner wrote nothing")
	}

	// The length of an uninterrupted job on the job server, from the
	// worker's boot to the job's end: the kills are drawn within it.
	js := startJobServer(t, prism, env)
	jobLen := func() time.Duration {
		bucket := srv.Bucket(t)
		a := submitAndKill(t, js, batch, boot, env, bucket, args, 0)
		if a.outcome != "success" {
			t.Fatalf("uninterrupted run on the job server: %v\njob server:\n%s", a, js.output())
		}
		sameObjects(t, s3test.Objects(t, client, bucket, outPrefix+"/"), want)
		return a.elapsed
	}()

	var kills, failures, timeouts, late, exact int
	for i := range loops {
		seed := base + uint64(i)
		rng := rand.New(rand.NewPCG(seed, 0x3017))
		bucket := srv.Bucket(t)
		var story []string
		planned := 1 + rng.IntN(2)
		// earlier holds the files that attempts which did not succeed
		// committed, with their modification times: later attempts keep
		// them, and never commit them again.
		earlier := map[string]time.Time{}
		for n := 1; ; n++ {
			var killAt time.Duration
			if n <= planned {
				killAt = time.Duration((0.05 + 0.9*rng.Float64()) * float64(jobLen))
			}
			secondAfter(earlier)
			a := submitAndKill(t, js, batch, boot, env, bucket, args, killAt)
			if a.outcome != "success" {
				for k, mt := range modTimes(t, client, bucket) {
					if _, file := want[k]; file {
						if _, ok := earlier[k]; !ok {
							earlier[k] = mt
						}
					}
				}
			}
			story = append(story, fmt.Sprintf("attempt %d: %v", n, a))
			switch {
			case a.killed:
				kills++
			case killAt > 0:
				late++
			}
			switch a.outcome {
			case "failure":
				failures++
			case "timeout":
				timeouts++
			}
			if a.outcome == "success" && n > planned {
				break
			}
			if n > planned+3 {
				t.Fatalf("loop %d (seed %d): no success in %d attempts: %s\njob server:\n%s", i, seed, n, strings.Join(story, "; "), js.output())
			}
		}
		sameObjects(t, s3test.Objects(t, client, bucket, outPrefix+"/"), want)
		now := modTimes(t, client, bucket)
		for k, mt := range earlier {
			if !now[k].Equal(mt) {
				t.Errorf("loop %d: %s, committed by an attempt that did not succeed, was committed again (modified %v, then %v)", i, k, mt, now[k])
			}
		}
		rep := sweepAndCheckClean(t, client, bucket, outPrefix+"/")
		sameObjects(t, s3test.Objects(t, client, bucket, outPrefix+"/"), want)
		if t.Failed() {
			t.Fatalf("loop %d (seed %d) failed: %s; rerun it with S3ONCE_CRASH_SEED=%d S3ONCE_WORKER_KILL_LOOPS=1", i, seed, strings.Join(story, "; "), seed)
		}
		exact++
		t.Logf("loop %d (seed %d): %s; exactly once: %d files byte-identical to the uninterrupted run, %d of them kept from attempts that did not succeed; sweep removed %d uploads and %d side objects",
			i, seed, strings.Join(story, "; "), len(want), len(earlier), rep.Uploads.Removed, rep.SideObjects.Removed)
	}
	t.Logf("%d loops (job %v uninterrupted): %d workers killed (%d kills came after the worker ended), %d attempts failed, %d timed out; %d loops exact",
		loops, jobLen.Round(time.Millisecond), kills, late, failures, timeouts, exact)
	if kills == 0 {
		t.Error("no kill hit a running worker")
	}
}

// submitAndKill submits the batch example to the job server and, when
// killAt > 0, SIGKILLs the worker the job server boots for it killAt after
// it booted. It returns the attempt's outcome: success, failure (the job
// failed) or timeout (the attempt's --timeout ran out).
func submitAndKill(t *testing.T, js *jobServer, bin, boot string, env []string, bucket string, args []string, killAt time.Duration) killAttempt {
	t.Helper()
	seen := len(workerPid.FindAllString(js.output(), -1))
	c := startChild(t, bin, env, nil, append(append([]string{"--bucket", bucket, "--timeout", workerKillTimeout.String()}, args...), js.flags(bin, boot)...)...)
	a := killAttempt{killAt: killAt}
	booted := time.Time{}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	pid := 0
wait:
	for {
		select {
		case <-c.done:
			break wait
		case <-tick.C:
		}
		if pid == 0 {
			if m := workerPid.FindAllStringSubmatch(js.output(), -1); len(m) > seen {
				pid, _ = strconv.Atoi(m[seen][1])
				booted = time.Now()
			}
			continue
		}
		if killAt > 0 && time.Since(booted) >= killAt {
			// The worker is the job server's grandchild, not ours: it is
			// signalled by its own pid, and only while it runs.
			a.killed = syscall.Kill(pid, syscall.SIGKILL) == nil
			break wait
		}
	}
	o := c.wait(workerKillTimeout + 2*time.Minute)
	a.elapsed = o.Elapsed
	if !booted.IsZero() {
		a.elapsed = o.Elapsed - booted.Sub(c.began)
	}
	switch {
	case o.TimedOut:
		t.Fatalf("the submitting program outlived its --timeout by two minutes: %v\nstderr:\n%s", o, o.Stderr)
	case o.Code == 0:
		a.outcome = "success"
	case o.Code == 1 && strings.Contains(o.Stderr, "context deadline exceeded"):
		a.outcome = "timeout"
	case o.Code == 1:
		a.outcome = "failure"
	default:
		t.Fatalf("the submitting program: %v, want exit 0 or 1\nstderr:\n%s", o, o.Stderr)
	}
	if killAt == 0 && a.outcome != "success" {
		t.Logf("an attempt without a kill ended in %s: %s", a.outcome, firstLines(o.Stderr, 3))
	}
	return a
}
