package integration

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// settingsMarker is the name of a folder's settings marker.
const settingsMarker = "_s3once_settings"

// workerPid is the boot program's line for a worker, with its pid.
var workerPid = regexp.MustCompile(`(?m)^workerboot: worker .*: running staged binary .* as pid (\d+)$`)

// workerKillTimeout bounds each attempt of the worker-kill loop (the
// example's --timeout): prism does not retry bundles, and a job whose
// worker died may wait for it; the attempt then ends in this timeout.
const workerKillTimeout = 90 * time.Second

// killAttempt is one submission of the job in the worker-kill loop.
type killAttempt struct {
	plan    workerKillPlan
	killed  bool          // a worker was running and was killed
	after   time.Duration // when the kill came, after the worker booted
	outcome string        // "success", "failure" or "timeout"
	elapsed time.Duration
	calls   map[event]int // the calls the proxy saw
}

func (a killAttempt) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	switch {
	case !a.plan.planned():
		return fmt.Sprintf("no kill: %s after %v", a.outcome, ms(a.elapsed))
	case !a.killed && a.plan.commit > 0:
		return fmt.Sprintf("kill at completion %d found no worker: %s after %v", a.plan.commit, a.outcome, ms(a.elapsed))
	case !a.killed:
		return fmt.Sprintf("kill at %v came after the worker ended: %s after %v", ms(a.plan.at), a.outcome, ms(a.elapsed))
	case a.plan.commit > 0:
		return fmt.Sprintf("worker killed at completion %d, %v after it booted: %s after %v", a.plan.commit, ms(a.after), a.outcome, ms(a.elapsed))
	}
	return fmt.Sprintf("worker killed %v after it booted: %s after %v", ms(a.after), a.outcome, ms(a.elapsed))
}

// TestWorkerKillLoop: the batch example on the prism job server, whose
// worker process (not the submitting program, not the job server) is
// SIGKILLed at a random moment of the job, once or twice; the job is
// submitted again until it succeeds, each attempt under --timeout. Each
// attempt's kill time and outcome (failure, timeout or success) is
// reported. The files must then be byte-identical to those of an
// uninterrupted run on the embedded runner, so every record is in them
// exactly once; a file an attempt committed before it died is kept, never
// committed again; and a sweep leaves nothing behind. Every third loop,
// from the first, kills its first worker mid-commit instead: as soon as
// the first file is committed, so that an attempt dies with part of the
// run committed and the next must keep those files.
// S3ONCE_WORKER_KILL_LOOPS sets the number of loops (make soak: 20).
func TestWorkerKillLoop(t *testing.T) {
	t.Parallel()
	loops := envInt("S3ONCE_WORKER_KILL_LOOPS", 3)
	base := crashSeed()
	rig := newKillRig(t, binary(t, "pipelines/batch"), nil)

	var kills, failures, timeouts, late, exact, partial int
	for i := range loops {
		seed := base + uint64(i)
		l := rig.loop(t, seed, i%3 == 0)
		kills, late, failures, timeouts = kills+l.kills, late+l.late, failures+l.failures, timeouts+l.timeouts
		for _, k := range l.recommitted {
			t.Errorf("loop %d: %s, committed by an attempt that did not succeed, was committed again", i, k)
		}
		if t.Failed() {
			t.Fatalf("loop %d (seed %d) failed: %s; rerun it with S3ONCE_CRASH_SEED=%d S3ONCE_WORKER_KILL_LOOPS=1", i, seed, l.story, seed)
		}
		exact++
		if len(l.earlier) > 0 {
			partial++
		}
		t.Logf("loop %d (seed %d): %s; exactly once: %d files byte-identical to the uninterrupted run, %d of them kept from attempts that did not succeed; sweep removed %d uploads and %d side objects",
			i, seed, l.story, len(rig.want), len(l.earlier), l.swept.Uploads.Removed, l.swept.SideObjects.Removed)
	}
	t.Logf("%d loops (job %v uninterrupted): %d workers killed (%d kills came after the worker ended), %d attempts failed, %d timed out; %d loops exact, %d of them with files kept from an attempt that died",
		loops, rig.jobLen.Round(time.Millisecond), kills, late, failures, timeouts, exact, partial)
	if kills == 0 {
		t.Error("no kill hit a running worker")
	}
}

// killRig is the worker-kill loop's setup: the batch example, a job
// server, and the files of an uninterrupted run on the embedded runner.
type killRig struct {
	bin, boot string
	srv       *s3test.Server
	client    *s3.Client
	js        *jobServer
	env       []string
	args      []string
	want      map[string][]byte
	// tp is the proxy every request of the job goes through, which kills
	// the worker at a completion.
	tp *tap
	// jobLen is the length of an uninterrupted job on the job server,
	// from the worker's boot to the job's end, and commits its number of
	// completions: the kills are drawn within them.
	jobLen  time.Duration
	commits int
}

// newKillRig runs the reference on the embedded runner with the clean
// build of the example, and starts a job server whose workers run bin
// (the submitted binary) with extra in their environment on top of the
// credentials.
func newKillRig(t *testing.T, bin string, extra []string) *killRig {
	t.Helper()
	prism, boot := jobServerBinaries(t)
	r := &killRig{bin: bin, boot: boot, srv: s3test.Start(t, s3test.Options{})}
	r.client = r.srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	r.env = childEnv(s3test.AccessKey, s3test.SecretKey)
	r.tp = newTap(t, r.srv.Endpoint())
	r.args = []string{"--s3-endpoint", r.tp.URL(), "--prefix", outPrefix, "--records", "6000", "--topics", "2", "--shards", "2",
		"--checkpoint-bytes", "65536", "--inline-tail-max", "-1", "--seed", "13"}

	embedded := r.srv.Bucket(t)
	ref := startChild(t, binary(t, "pipelines/batch"), r.env, nil, append([]string{"--bucket", embedded, "--timeout", "4m"}, r.args...)...).wait(5 * time.Minute)
	if ref.Code != 0 {
		t.Fatalf("run on the embedded runner: %v\n%s", ref, ref.Stderr)
	}
	r.want = s3test.Objects(t, r.client, embedded, outPrefix+"/")
	if len(r.want) == 0 {
		t.Fatal("the run on the embedded runner wrote nothing")
	}

	r.js = startJobServer(t, prism, append(slices.Clone(r.env), extra...))
	bucket := r.srv.Bucket(t)
	a := r.submitAndKill(t, bucket, workerKillPlan{})
	if a.outcome != "success" {
		t.Fatalf("uninterrupted run on the job server: %v\njob server:\n%s", a, r.js.output())
	}
	sameObjects(t, s3test.Objects(t, r.client, bucket, outPrefix+"/"), r.want)
	r.jobLen, r.commits = a.elapsed, a.calls[evComplete]
	if r.commits == 0 {
		t.Fatalf("the uninterrupted run on the job server made no completion through the proxy: %v", a.calls)
	}
	return r
}

// killLoop is what one loop of the worker-kill loop found.
type killLoop struct {
	story                           string
	kills, late, failures, timeouts int
	// earlier holds the files that attempts which did not succeed
	// committed; recommitted those of them a later attempt committed
	// again (their modification time changed).
	earlier     map[string]time.Time
	recommitted []string
	swept       committer.SweepReport
}

// loop runs one loop into a new bucket: one or two attempts whose worker
// is killed at a random moment (the first of them mid-commit, at a random
// one of the run's completions, when midCommit is set), then attempts
// until one succeeds. The files must be byte-identical to the reference's, and again
// after a sweep, which must leave nothing behind.
func (r *killRig) loop(t *testing.T, seed uint64, midCommit bool) killLoop {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x3017))
	bucket := r.srv.Bucket(t)
	l := killLoop{earlier: map[string]time.Time{}}
	var story []string
	planned := 1 + rng.IntN(2)
	for n := 1; ; n++ {
		var plan workerKillPlan
		if n <= planned {
			plan.at = time.Duration((0.05 + 0.9*rng.Float64()) * float64(r.jobLen))
			if midCommit && n == 1 {
				plan = workerKillPlan{commit: 1 + rng.IntN(r.commits)}
			}
		}
		secondAfter(l.earlier)
		a := r.submitAndKill(t, bucket, plan)
		if a.outcome != "success" {
			for k, mt := range modTimes(t, r.client, bucket) {
				if _, file := r.want[k]; file {
					if _, ok := l.earlier[k]; !ok {
						l.earlier[k] = mt
					}
				}
			}
		}
		story = append(story, fmt.Sprintf("attempt %d: %v", n, a))
		switch {
		case a.killed:
			l.kills++
		case plan.planned():
			l.late++
		}
		switch a.outcome {
		case "failure":
			l.failures++
		case "timeout":
			l.timeouts++
		}
		if a.outcome == "success" && n > planned {
			break
		}
		if n > planned+3 {
			t.Fatalf("seed %d: no success in %d attempts: %s\njob server:\n%s", seed, n, strings.Join(story, "; "), r.js.output())
		}
	}
	l.story = strings.Join(story, "; ")
	sameObjects(t, s3test.Objects(t, r.client, bucket, outPrefix+"/"), r.want)
	now := modTimes(t, r.client, bucket)
	for k, mt := range l.earlier {
		if !now[k].Equal(mt) {
			l.recommitted = append(l.recommitted, k)
		}
	}
	slices.Sort(l.recommitted)
	l.swept = sweepAndCheckClean(t, r.client, bucket, outPrefix+"/")
	sameObjects(t, s3test.Objects(t, r.client, bucket, outPrefix+"/"), r.want)
	return l
}

// workerKillPlan says when an attempt's worker is killed: at after it
// booted, or, with commit > 0, as the server answers the run's commit-th
// completion (CompleteMultipartUpload), before the answer reaches the
// worker: the worker dies with that many files committed, give or take the
// completions in flight beside it. The zero plan kills nothing.
type workerKillPlan struct {
	at     time.Duration
	commit int
}

func (p workerKillPlan) planned() bool { return p.at > 0 || p.commit > 0 }

// submitAndKill submits the example to the job server and kills the
// worker the job server boots for it as plan says. It returns the
// attempt's outcome: success, failure (the job failed) or timeout (the
// attempt's --timeout ran out).
func (r *killRig) submitAndKill(t *testing.T, bucket string, plan workerKillPlan) killAttempt {
	t.Helper()
	js := r.js
	seen := len(workerPid.FindAllString(js.output(), -1))
	a := killAttempt{plan: plan}
	// pid is the worker's, once it booted; the proxy's trigger kills it
	// at the plan's completion, the loop below at the plan's time.
	var pid, tapKilled atomic.Int64
	var tapAfter atomic.Int64
	booted := time.Time{}
	var bootedAt atomic.Int64
	if plan.commit > 0 {
		r.tp.arm(&trigger{ev: evComplete, n: plan.commit, phase: afterServer, action: func() {
			if p := pid.Load(); p != 0 && syscall.Kill(int(p), syscall.SIGKILL) == nil {
				tapKilled.Store(1)
				tapAfter.Store(int64(time.Since(time.Unix(0, bootedAt.Load()))))
			}
		}})
	} else {
		r.tp.arm(nil)
	}
	c := startChild(t, r.bin, r.env, nil, append(append([]string{"--bucket", bucket, "--timeout", workerKillTimeout.String()}, r.args...), js.flags(r.bin, r.boot)...)...)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-c.done:
			break wait
		case <-tick.C:
		}
		if pid.Load() == 0 {
			if m := workerPid.FindAllStringSubmatch(js.output(), -1); len(m) > seen {
				p, _ := strconv.Atoi(m[seen][1])
				booted = time.Now()
				bootedAt.Store(booted.UnixNano())
				pid.Store(int64(p))
			}
			continue
		}
		if plan.at > 0 && time.Since(booted) >= plan.at {
			// The worker is the job server's grandchild, not ours: it is
			// signalled by its own pid, and only while it runs.
			a.killed = syscall.Kill(int(pid.Load()), syscall.SIGKILL) == nil
			a.after = time.Since(booted)
			break wait
		}
	}
	o := c.wait(workerKillTimeout + 2*time.Minute)
	a.calls = r.tp.Counts()
	r.tp.arm(nil)
	if tapKilled.Load() == 1 {
		a.killed, a.after = true, time.Duration(tapAfter.Load())
	}
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
	if !plan.planned() && a.outcome != "success" {
		t.Logf("an attempt without a kill ended in %s: %s", a.outcome, firstLines(o.Stderr, 3))
	}
	return a
}
