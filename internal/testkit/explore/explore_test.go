package explore

import (
	"strings"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// TestFaultFreeSchedule: the default schedule commits the file and passes
// every check; it is what the other schedules are measured against.
func TestFaultFreeSchedule(t *testing.T) {
	res := RunSchedule(t, DefaultStream(), Plan{})
	if len(res.Violations) > 0 || len(res.Errors) > 0 || res.Attempts != 1 {
		t.Fatalf("%s", res)
	}
}

// quickFaults are the fates of the quick bound: the process dies after the
// server applied the request. (A crash before sending a call of a process
// that has nothing else in flight is a crash after the call before it;
// make explore tries every fate.)
var quickFaults = []s3mem.Kind{s3mem.CrashAfterApply}

// TestExploreQuick enumerates every ordering of the one-file workload's
// releases (its attempts' part uploads run two at a time) with at most one
// fault, a crash after the server applied the request, at every release of
// each, in the orders at most one departure from the default. With
// S3ONCE_EXPLORE=wide, every fate but Conflict (which has a test of its
// own).
func TestExploreQuick(t *testing.T) {
	b := Bounds{Preemptions: quickPreemptions, Picks: quickPicks, Faults: quickFaults}
	if wide() {
		b = Bounds{Preemptions: quickPreemptions, Picks: quickPicks}
		for _, k := range s3mem.Kinds {
			if k != s3mem.Conflict {
				b.Faults = append(b.Faults, k)
			}
		}
	}
	start := time.Now()
	report(t, "one", b, Explore(t, DefaultStream(), b), start, true)
}

// TestExploreConflictOnComplete: a 409 ConditionalRequestConflict on each
// completion of every ordering. The committer once aborted the token's own
// upload on a 409, losing the file (TestMutantAbortOn409 keeps the
// explorer catching it). With S3ONCE_EXPLORE=wide, at every release.
func TestExploreConflictOnComplete(t *testing.T) {
	b := Bounds{Preemptions: quickPreemptions, Picks: quickPicks, Faults: []s3mem.Kind{s3mem.Conflict}, Ops: []s3mem.Op{s3fault.CompleteMultipartUpload}}
	if wide() {
		b = Bounds{Preemptions: quickPreemptions, Picks: quickPicks, Faults: []s3mem.Kind{s3mem.Conflict}}
	}
	start := time.Now()
	results := Explore(t, DefaultStream(), b)
	met := 0
	for _, r := range results {
		for _, l := range r.Trace {
			if strings.Contains(l, string(s3fault.CompleteMultipartUpload)+" ") && strings.HasSuffix(l, "<- conflict") {
				met++
			}
		}
	}
	if met == 0 {
		t.Fatal("no completion met the 409")
	}
	report(t, "one", b, results, start, false)
}

// report fails the test on the first violations, checks the faults bit
// (some schedule needed an extra attempt) when bite is set, and prints how
// many schedules were explored within which bounds.
func report(t *testing.T, workload string, b Bounds, results []Result, start time.Time, bite bool) {
	t.Helper()
	failed, recovered, preempted, reordered := 0, 0, 0, 0
	for _, r := range results {
		if r.Attempts > results[0].Attempts {
			recovered++
		}
		if r.Preemptions > 0 {
			preempted++
		}
		for _, c := range r.Plan.Choices {
			if c.Pick >= 0 {
				reordered++
				break
			}
		}
		if len(r.Violations) > 0 {
			failed++
			if failed <= 2 {
				t.Errorf("%s", r)
			}
		}
	}
	if bite && recovered == 0 {
		t.Fatal("no schedule needed more attempts than the default one: the faults never bit")
	}
	t.Logf("workload %s: explored %d schedules (%s) in %v; %d reordered, %d with a preemption, %d recovered in an extra attempt, %d with violations",
		workload, len(results), b, time.Since(start).Round(time.Millisecond), reordered, preempted, recovered, failed)
}

// TestExploreDuplicateCommit: the file is committed by two committers at
// once (the fast path and the commit stage, each with a client of its own),
// in every ordering within the ordering bounds. Where both completions are
// held at the server together, the one applied second meets 409 while the
// other is in flight; both must still report success, and every check must
// hold. The enumeration itself is checked too: each schedule runs once (no
// two make the same releases) and keeps to the bounds, and one reaches the
// preemption bound. With S3ONCE_EXPLORE=wide, the wide ordering bounds,
// then the quick ones under one crash after applying at every release.
func TestExploreDuplicateCommit(t *testing.T) {
	w := DefaultStream()
	w.duplicateCommit = true
	b := Bounds{Preemptions: quickPreemptions, Picks: quickPicks}
	if wide() {
		b = Bounds{Preemptions: widePreemptions, Picks: widePicks}
	}
	start := time.Now()
	results := Explore(t, w, b)
	orders, took := len(results), time.Since(start)
	if wide() {
		faults := Bounds{Preemptions: quickPreemptions, Picks: quickPicks, Faults: quickFaults}
		start := time.Now()
		more := Explore(t, w, faults)
		report(t, "one-duplicate", faults, more, start, true)
		results = append(results, more...)
	}
	conflicts := 0
	seen := map[string]string{}
	reached := false
	for _, r := range results {
		if r.Plan.Faults() == 0 && len(r.Errors) > 0 {
			t.Errorf("fault-free duplicate commit: %s", r)
		}
		conflicts += r.Conflicts
		trace := strings.Join(r.Trace, "\n")
		if p, ok := seen[trace]; ok {
			t.Errorf("schedules %s and %s made the same releases", p, r.Plan)
		}
		seen[trace] = r.Plan.String()
		if r.Preemptions > b.Preemptions {
			t.Errorf("schedule %s made %d preemptions, over the bound %d", r.Plan, r.Preemptions, b.Preemptions)
		}
		reached = reached || r.Preemptions == b.Preemptions
	}
	if !reached {
		t.Errorf("no schedule of %d made %d preemption(s)", len(results), b.Preemptions)
	}
	if conflicts == 0 {
		t.Fatal("no ordering held both completions at once: the race was not exercised")
	}
	// The orders' count and time, apart from the faults' (reported above).
	report(t, "one-duplicate", b, results[:orders], time.Now().Add(-took), false)
}

// TestExploreSlowDown: a 503 SlowDown at every release of the one-file
// workload's default order, answered at the HTTP layer below the SDK's
// retryer. With the clients' Throttle, a SlowDown is not an attempt: the
// call is sent again after its lane's backoff, so no schedule needs a
// second attempt (process), every check holds, and each schedule met its
// SlowDown. (Without the backoff and the budget, TestMutantNoThrottleBackoff
// shows the first part upload's SlowDown breaking the stream.)
func TestExploreSlowDown(t *testing.T) {
	b := Bounds{Faults: []s3mem.Kind{s3mem.SlowDown}}
	start := time.Now()
	results := Explore(t, DefaultStream(), b)
	met := 0
	for _, r := range results {
		if r.Plan.Faults() == 0 {
			continue
		}
		if r.Attempts != 1 || len(r.Errors) > 0 {
			t.Errorf("a SlowDown cost an attempt: %s", r)
		}
		for _, l := range r.Trace {
			if strings.HasSuffix(l, "<- "+s3mem.SlowDown.String()) {
				met++
				break
			}
		}
	}
	if met < len(results)-1 {
		t.Errorf("only %d of %d schedules met their SlowDown", met, len(results))
	}
	report(t, "one", b, results, start, false)
}
