package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// outPrefix is where the batch example writes in these tests.
const outPrefix = "corpus"

// batchConfig is a set of flags of the batch example.
type batchConfig struct {
	name string
	args []string
}

// The crash loops go round three shapes of output: many small gzip files
// with a checkpoint every 64 KiB of records (every tail a side object), one
// large uncompressed file of three 5 MiB parts, and Parquet files whose row
// groups (256 KiB of records) span many checkpoints, so that a rerun
// re-encodes the records of open files.
var crashConfigs = []batchConfig{
	{"gzip-many-checkpoints", []string{"--records", "12000", "--topics", "3", "--shards", "2",
		"--checkpoint-bytes", "65536", "--inline-tail-max", "-1", "--seed", "7"}},
	{"plain-multipart", []string{"--records", "14000", "--topics", "1", "--shards", "1", "--compression", "none",
		"--max-words", "200", "--checkpoint-bytes", "524288", "--part-size", "5242880", "--seed", "11"}},
	{"parquet-spanning-checkpoints", []string{"--records", "12000", "--topics", "2", "--shards", "2", "--format", "parquet",
		"--row-group-bytes", "262144", "--checkpoint-bytes", "65536", "--inline-tail-max", "-1", "--seed", "17"}},
}

// faultConfig is a smaller run for the fault tests, which slow it down.
var faultConfig = batchConfig{"gzip-small", []string{"--records", "6000", "--topics", "2", "--shards", "2",
	"--checkpoint-bytes", "65536", "--inline-tail-max", "-1", "--seed", "13"}}

// runBatch starts the batch example against endpoint.
func runBatch(t testing.TB, bin string, env []string, endpoint, bucket string, cfg batchConfig, extra ...string) *child {
	t.Helper()
	args := append([]string{"--bucket", bucket, "--prefix", outPrefix, "--s3-endpoint", endpoint, "--timeout", "4m"}, cfg.args...)
	return startChild(t, bin, env, nil, append(args, extra...)...)
}

// reference is the output of an uninterrupted run of a configuration, and
// what it sent over the wire.
type reference struct {
	objects map[string][]byte
	counts  map[event]int
	elapsed time.Duration
}

// most is how many calls of a kind (or, for evAny, of all kinds) every run
// of the configuration makes, at least: completions vary (a
// bundle-finalization callback and the commit stage may both complete a
// file), but every file is completed once.
func (r *reference) most(ev event) int {
	count := func(kind event) int {
		if kind == evComplete {
			return min(r.counts[kind], len(r.objects))
		}
		return r.counts[kind]
	}
	n := 0
	if ev == evAny {
		for kind := range r.counts {
			n += count(kind)
		}
	} else {
		n = count(ev)
	}
	return max(n, 1)
}

type references struct {
	mu   sync.Mutex
	refs map[string]*reference
}

// get runs cfg once, uninterrupted, through the tap, and remembers it. The
// reference checkpoints by bytes alone: time only adds checkpoints (on a slow
// run) and the bytes do not depend on where they fall, so its counts of
// calls are the least a run of cfg makes, and a trigger drawn within them is
// reached by every run.
func (rs *references) get(t testing.TB, bin string, env []string, srv *s3test.Server, tp *tap, client *s3.Client, cfg batchConfig) *reference {
	t.Helper()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.refs == nil {
		rs.refs = map[string]*reference{}
	}
	if r := rs.refs[cfg.name]; r != nil {
		return r
	}
	bucket := srv.Bucket(t)
	tp.arm(nil)
	o := runBatch(t, bin, env, tp.URL(), bucket, cfg, "--checkpoint-interval", "-1s").wait(4 * time.Minute)
	if o.Code != 0 {
		t.Fatalf("reference run of %s: %v\n%s", cfg.name, o, o.Stderr)
	}
	r := &reference{objects: s3test.Objects(t, client, bucket, outPrefix+"/"), counts: tp.Counts(), elapsed: o.Elapsed}
	if len(r.objects) == 0 {
		t.Fatalf("reference run of %s wrote nothing", cfg.name)
	}
	checkClean(t, client, bucket)
	t.Logf("reference %s: %d objects in %v; calls %v", cfg.name, len(r.objects), o.Elapsed.Round(time.Millisecond), r.counts)
	rs.refs[cfg.name] = r
	return r
}

// killPlan says when one attempt is killed.
type killPlan struct {
	kind    string
	after   time.Duration // a timer, or
	trigger *trigger      // a protocol point
}

func (p killPlan) String() string {
	if p.trigger != nil {
		return p.kind + " (" + p.trigger.String() + ")"
	}
	return fmt.Sprintf("%s (%v)", p.kind, p.after.Round(time.Millisecond))
}

// pickPlan draws a kill moment: a timer within the reference's duration, or
// a protocol point within the reference's count of that call.
func pickPlan(rng *rand.Rand, ref *reference) killPlan {
	nth := func(ev event) int { return 1 + rng.IntN(ref.most(ev)) }
	switch rng.IntN(6) {
	case 0, 1:
		f := 0.1 + 0.9*rng.Float64()
		return killPlan{kind: "timer", after: time.Duration(f * float64(ref.elapsed))}
	case 2:
		if rng.IntN(2) == 0 {
			return killPlan{kind: "inside a persist, before the server", trigger: &trigger{ev: evPersist, n: nth(evPersist), phase: beforeServer}}
		}
		return killPlan{kind: "after a persist", trigger: &trigger{ev: evPersist, n: nth(evPersist), phase: afterServer}}
	case 3:
		return killPlan{kind: "inside commit, before the server", trigger: &trigger{ev: evComplete, n: nth(evComplete), phase: beforeServer}}
	case 4:
		return killPlan{kind: "inside commit, after the server", trigger: &trigger{ev: evComplete, n: nth(evComplete), phase: afterServer}}
	default:
		return killPlan{kind: "during a part upload", trigger: &trigger{ev: evPart, n: nth(evPart), phase: afterServer}}
	}
}

// attempt runs the batch example once under plan and reports whether it
// was really killed (a kill that lands after the exit is no crash).
func attempt(t testing.TB, bin string, env []string, tp *tap, bucket string, cfg batchConfig, plan killPlan) (crashed bool, o outcome) {
	t.Helper()
	k := newKiller()
	if plan.trigger != nil {
		tr := *plan.trigger
		tr.action = k.kill
		tp.arm(&tr)
	} else {
		tp.arm(nil)
	}
	c := runBatch(t, bin, env, tp.URL(), bucket, cfg)
	k.set(c)
	var timer *time.Timer
	if plan.after > 0 {
		timer = time.AfterFunc(plan.after, k.kill)
	}
	o = c.wait(4 * time.Minute)
	if timer != nil {
		timer.Stop()
	}
	tp.arm(nil)
	if o.TimedOut {
		t.Fatalf("attempt under %v hung: %v\nstderr:\n%s", plan, o, o.Stderr)
	}
	if !o.Killed && o.Code != 0 {
		t.Fatalf("attempt under %v failed without being killed: %v\nstderr:\n%s", plan, o, o.Stderr)
	}
	return o.Killed, o
}

func crashSeed() uint64 {
	if v, err := strconv.ParseUint(os.Getenv("S3ONCE_CRASH_SEED"), 10, 64); err == nil {
		return v
	}
	return 1
}

// The embedded runner keeps no checkpoint across a process death, so each
// rerun starts over: what this proves is that a pipeline killed anywhere and
// run again converges on exactly the uninterrupted output, because files are
// named and filled deterministically and commits are conditional and
// verified; and that what the killed runs left behind is swept.
func TestPipelineCrashLoop(t *testing.T) {
	t.Parallel()
	loops := envInt("S3ONCE_CRASH_LOOPS", 5)
	base := crashSeed()
	bin := binary(t, "pipelines/batch")
	srv := s3test.Start(t, s3test.Options{})
	tp := newTap(t, srv.Endpoint())
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	var refs references

	crashes := map[string]int{}
	notCrashes := 0
	for i := range loops {
		seed := base + uint64(i)
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		cfg := crashConfigs[i%len(crashConfigs)]
		ref := refs.get(t, bin, env, srv, tp, client, cfg)
		bucket := srv.Bucket(t)

		var story []string
		for range 1 + rng.IntN(3) {
			plan := pickPlan(rng, ref)
			crashed, o := attempt(t, bin, env, tp, bucket, cfg, plan)
			if crashed {
				crashes[plan.kind]++
				story = append(story, fmt.Sprintf("killed %s after %v", plan, o.Elapsed.Round(time.Millisecond)))
			} else {
				notCrashes++
				story = append(story, fmt.Sprintf("finished before the kill (%s)", plan))
			}
		}
		tp.arm(nil)
		final := runBatch(t, bin, env, tp.URL(), bucket, cfg).wait(4 * time.Minute)
		if final.Code != 0 {
			t.Fatalf("loop %d (seed %d, %s): final run %v after %s\nstderr:\n%s", i, seed, cfg.name, final, strings.Join(story, "; "), final.Stderr)
		}
		got := s3test.Objects(t, client, bucket, outPrefix+"/")
		sameObjects(t, got, ref.objects)
		rep := sweepAndCheckClean(t, client, bucket, outPrefix+"/")
		sameObjects(t, s3test.Objects(t, client, bucket, outPrefix+"/"), ref.objects)
		verifyFolder(t, srv.Endpoint(), bucket, outPrefix)
		t.Logf("loop %d (seed %d, %s): %s; final run %v; sweep removed %d uploads and %d side objects",
			i, seed, cfg.name, strings.Join(story, "; "), final, rep.Uploads.Removed, rep.SideObjects.Removed)
		if t.Failed() {
			t.Fatalf("loop %d (seed %d) failed; rerun it with S3ONCE_CRASH_SEED=%d S3ONCE_CRASH_LOOPS=1", i, seed, seed)
		}
	}
	total := 0
	var kinds []string
	for k, n := range crashes {
		total += n
		kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("%d loops, %d real crashes (%s), %d kills that came after the run had finished", loops, total, strings.Join(kinds, ", "), notCrashes)
	if total < (loops+1)/2 {
		t.Errorf("only %d of the attempts were real crashes in %d loops", total, loops)
	}
}
