package explore

import (
	"os"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// wide tells whether make explore runs the tests (S3ONCE_EXPLORE=wide): the
// wider bounds, two faults per schedule.
func wide() bool { return os.Getenv("S3ONCE_EXPLORE") == "wide" }

// The ordering bounds of make test and make explore: the most preemptions,
// and the most departures from the default release (every preemption is
// one), per schedule.
const (
	quickPreemptions, quickPicks = 1, 1
	widePreemptions, widePicks   = 2, 2
)

// commitOps are the calls the commits, the rollback and the duplicate turn
// on.
var commitOps = []s3mem.Op{s3fault.CompleteMultipartUpload, s3fault.AbortMultipartUpload}

// TestExploreIssue explores IssueWorkload (two files, a rollback, a
// duplicate commit) in two passes: every ordering within the ordering
// bounds, fault-free; then faults in the default order. In make test, a
// crash after the server applied each completion and abort; in make
// explore, two faults per schedule: a crash after applying at every
// release, then another at every later completion and abort.
func TestExploreIssue(t *testing.T) {
	orders := Bounds{Preemptions: quickPreemptions, Picks: quickPicks}
	faults := Bounds{Faults: []s3mem.Kind{s3mem.CrashAfterApply}, Ops: commitOps}
	if wide() {
		orders = Bounds{Preemptions: widePreemptions, Picks: widePicks}
		faults = Bounds{Faults: []s3mem.Kind{s3mem.CrashAfterApply}, Second: []s3mem.Kind{s3mem.CrashAfterApply}, SecondOps: commitOps}
	}
	start := time.Now()
	results := Explore(t, IssueWorkload(), orders)
	// The default schedule: both files committed, the first written again
	// after the rollback, the second committed twice at once.
	if base := results[0]; len(base.Errors) > 0 || base.Rewrites != 1 || base.Attempts != 2 {
		t.Errorf("fault-free: want no error, one rewrite, two attempts:\n%s", base)
	}
	for _, r := range results {
		if len(r.Errors) > 0 {
			t.Errorf("a fault-free ordering failed: %s", r)
		}
	}
	report(t, "issue", orders, results, start, false)
	start = time.Now()
	report(t, "issue", faults, Explore(t, IssueWorkload(), faults), start, true)
}

// TestExploreSweepBetween runs the committer's sweep at every quiescent
// point, with a cutoff at the run's start (so a forced one): it must
// remove nothing of a run younger than its cutoff, whatever is in flight,
// and the run must end as without it; the sweep after the run still leaves
// nothing. On the one-file workload with one crash after applying at every
// side-object or probe PUT and completion, in the default order (make
// explore: every fate at every release, and the two-file workload with a
// crash after applying at every release).
func TestExploreSweepBetween(t *testing.T) {
	b := Bounds{Faults: quickFaults, Ops: []s3mem.Op{s3fault.PutObject, s3fault.CompleteMultipartUpload}, Sweep: true}
	if wide() {
		b = Bounds{Faults: s3mem.Kinds, Sweep: true}
	}
	start := time.Now()
	results := Explore(t, DefaultStream(), b)
	for _, r := range results {
		if r.Sweeps == 0 {
			t.Fatalf("schedule %s ran no sweep between its steps", r.Plan)
		}
	}
	report(t, "one", b, results, start, true)
	if wide() {
		start = time.Now()
		b = Bounds{Faults: quickFaults, Sweep: true}
		report(t, "issue", b, Explore(t, IssueWorkload(), b), start, true)
	}
}

// TestExploreTwoFaults (make explore only): two faults per schedule on the
// one-file workload: a first fault of every fate at every release, then a
// crash before sending at every later release, in the default order.
func TestExploreTwoFaults(t *testing.T) {
	if !wide() {
		t.Skip("two faults per schedule: make explore (S3ONCE_EXPLORE=wide)")
	}
	start := time.Now()
	b := Bounds{Faults: s3mem.Kinds, Second: []s3mem.Kind{s3mem.CrashBeforeSend}}
	report(t, "one", b, Explore(t, DefaultStream(), b), start, true)
}
