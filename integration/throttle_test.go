package integration

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/slowdown"
)

// stormLength is the storm a run rides out: S3 re-partitions a prefix for
// minutes; half a minute is long enough to outlast any SDK retry budget
// (three attempts within a few seconds) many times over.
const stormLength = 30 * time.Second

// stormRun runs the batch example bin through a SlowDown injector in front
// of srv, raises a storm of length as soon as the run's first upload has
// been created (an endless one when length is 0, calmed when the run ends),
// and returns how the run ended. The storm hits the run's writes and
// commits and what comes after them; the preflight before them is left
// alone, as its checks make one attempt each.
func stormRun(t *testing.T, bin string, env []string, srv *s3test.Server, bucket string, length time.Duration, extra ...string) (outcome, *slowdown.Injector) {
	t.Helper()
	var writing atomic.Bool
	inj := slowdown.New(slowdown.Options{Match: func(r *http.Request) bool {
		if classify(r) == evCreate {
			writing.Store(true)
		}
		return writing.Load()
	}})
	px, err := inj.Proxy(srv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	c := runBatch(t, bin, env, px.URL(), bucket, faultConfig, append([]string{"--timeout", "10m"}, extra...)...)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for inj.Matched() == 0 {
		select {
		case <-c.done:
			o := c.wait(0)
			t.Fatalf("the run ended before its first write: %v\nstderr:\n%s", o, o.Stderr)
		case <-tick.C:
		}
	}
	if length == 0 {
		length = 24 * time.Hour
	}
	inj.Storm(length)
	o := c.wait(10 * time.Minute)
	inj.Calm()
	if o.TimedOut {
		t.Fatalf("the run in a storm hung: %v\nstderr:\n%s", o, o.Stderr)
	}
	return o, inj
}

// batchFixture is a server, a tap for the runs without a fault, and the
// reference output of faultConfig.
type batchFixture struct {
	srv    *s3test.Server
	client *s3.Client
	env    []string
	tp     *tap
	ref    *reference
}

// newBatchFixture starts a server and makes the reference with clean (the
// batch example built without the mutant tag).
func newBatchFixture(t *testing.T, clean string) batchFixture {
	t.Helper()
	f := batchFixture{srv: s3test.Start(t, s3test.Options{}), env: childEnv(s3test.AccessKey, s3test.SecretKey)}
	f.client = f.srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	f.tp = newTap(t, f.srv.Endpoint())
	var refs references
	f.ref = refs.get(t, clean, f.env, f.srv, f.tp, f.client, faultConfig)
	return f
}

// rerunExact runs clean again on bucket without a fault: it must complete
// exactly, and a sweep must then leave nothing behind.
func (f batchFixture) rerunExact(t *testing.T, clean, bucket string) {
	t.Helper()
	f.tp.arm(nil)
	final := runBatch(t, clean, f.env, f.tp.URL(), bucket, faultConfig).wait(4 * time.Minute)
	if final.Code != 0 {
		t.Fatalf("rerun without the fault: %v\nstderr:\n%s", final, final.Stderr)
	}
	sameObjects(t, s3test.Objects(t, f.client, bucket, outPrefix+"/"), f.ref.objects)
	rep := sweepAndCheckClean(t, f.client, bucket, outPrefix+"/")
	t.Logf("rerun %v; sweep removed %d uploads and %d side objects", final, rep.Uploads.Removed, rep.SideObjects.Removed)
}

// throttledLine is the summary's line of the throttling counters.
var throttledLine = regexp.MustCompile(`throttled \(SlowDown\) calls (\d+) · answers (\d+)`)

// TestThrottleStorm: a run through a storm of SlowDown answers, injected at
// the HTTP layer so that the SDK's retryer meets them, finishes with
// exactly the output of a run without it, only later. No call fails: the
// storm is shorter than the default ThrottleBudget. The run's counters show
// the throttled calls and answers, no more answers than the injector gave.
func TestThrottleStorm(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	f := newBatchFixture(t, bin)
	client, ref := f.client, f.ref

	bucket := f.srv.Bucket(t)
	o, inj := stormRun(t, bin, f.env, f.srv, bucket, stormLength)
	if o.Code != 0 {
		t.Fatalf("the run failed in a %v storm (%d SlowDowns): %v\nstderr:\n%s", stormLength, inj.SlowDowns(), o, o.Stderr)
	}
	sameObjects(t, s3test.Objects(t, client, bucket, outPrefix+"/"), ref.objects)
	if inj.SlowDowns() == 0 {
		t.Fatal("the storm answered no request SlowDown")
	}
	m := throttledLine.FindStringSubmatch(o.Stdout)
	if m == nil {
		t.Fatalf("the summary shows no throttled calls, yet the injector gave %d SlowDowns:\n%s", inj.SlowDowns(), o.Stdout)
	}
	calls, _ := strconv.ParseInt(m[1], 10, 64)
	answers, _ := strconv.ParseInt(m[2], 10, 64)
	if calls == 0 || answers == 0 || answers > inj.SlowDowns() {
		t.Errorf("the run counted %d throttled calls and %d answers; the injector gave %d", calls, answers, inj.SlowDowns())
	}
	rep := sweepAndCheckClean(t, client, bucket, outPrefix+"/")
	t.Logf("run through a %v storm: %v (uninterrupted: %v); %d SlowDowns given, %d requests passed; %s; sweep removed %d uploads",
		stormLength, o, ref.elapsed.Round(time.Millisecond), inj.SlowDowns(), inj.Passed(), m[0], rep.Uploads.Removed)
}

// TestThrottleBudgetExhausted: a storm longer than the ThrottleBudget fails
// the run with the throttled error, and not before a call has waited its
// budget; no object is wrong, and a rerun after the storm completes
// exactly, leaving nothing a sweep does not remove.
func TestThrottleBudgetExhausted(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	f := newBatchFixture(t, bin)

	const budget = 10 * time.Second
	bucket := f.srv.Bucket(t)
	o, inj := stormRun(t, bin, f.env, f.srv, bucket, 0, "--s3-throttle-budget", budget.String())
	if o.Code != 1 {
		t.Fatalf("the run in an endless storm: %v, want exit 1 (the pipeline failed)\nstderr:\n%s", o, o.Stderr)
	}
	if !errcode.Has(errorText(o.Stderr), errcode.Throttled) {
		t.Errorf("the run failed (%v) without %s:\n%s", o, errcode.Throttled.Token(), o.Stderr)
	}
	if o.Elapsed < budget {
		t.Errorf("the run failed after %v, before the budget of %v", o.Elapsed, budget)
	}
	// The budget is per call: the error is one call's, naming its key,
	// the answers it got and the budget that ended it, not the run's time.
	// It also says how long that one call was throttled, from its first
	// SlowDown answer to its last: no less than the budget.
	msg := o.Stderr
	m := regexp.MustCompile(`s3://[^ ]+/[^ ]+.*: [0-9]+ SlowDown answers over ([0-9.a-zµ]+), throttled past its budget of ` + regexp.QuoteMeta(budget.String())).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("the throttled error is not one call's, ended by the per-call budget of %v:\n%s", budget, msg)
	}
	waited, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatalf("the throttled error's wait %q: %v", m[1], err)
	}
	if waited < budget {
		t.Errorf("the call failed after being throttled for %v, before its budget of %v:\n%s", waited, budget, throttledMessage(msg))
	}
	noWrongObject(t, s3test.Objects(t, f.client, bucket, outPrefix+"/"), f.ref.objects)
	t.Logf("in an endless storm with a budget of %v: %v after %d SlowDowns; %s", budget, o, inj.SlowDowns(), throttledMessage(o.Stderr))
	f.rerunExact(t, bin, bucket)
}

// throttledMessage is the line of a child's error output that carries the
// throttled error's code, shortened.
func throttledMessage(stderr string) string {
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, errcode.Throttled.Token()) {
			return firstLines(line, 1)
		}
	}
	return firstLines(stderr, 2)
}

// errorText is a child's error output as an error, for errcode.
type errorText string

func (e errorText) Error() string { return strings.TrimSpace(string(e)) }
