package explore

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/s3fault"
	"github.com/s3once/s3once/internal/s3mem"
)

// TestFaultFreeSchedule: the fault-free run commits the file and passes
// every check; it is what the other schedules are measured against.
func TestFaultFreeSchedule(t *testing.T) {
	res := RunSchedule(t, DefaultStream(), Plan{})
	if len(res.Violations) > 0 || len(res.Errors) > 0 || res.Attempts != 1 {
		t.Fatalf("%s", res)
	}
}

// quickFaults are the fates of the quick bound: the process dies after the
// server applied the request. (A crash before
// sending a call of a process that has nothing else in flight is a crash
// after the call before it; make explore tries every fate.)
var quickFaults = []s3mem.Kind{s3mem.CrashAfterApply}

// TestExploreQuick enumerates one fault at every release of the one-file
// workload, in the First release order (every order and every fault kind
// but Conflict, which has a test of its own, with S3ONCE_EXPLORE=wide).
func TestExploreQuick(t *testing.T) {
	b := Bounds{Faults: quickFaults}
	if os.Getenv("S3ONCE_EXPLORE") == "wide" {
		b = Bounds{Orders: Orders}
		for _, k := range s3mem.Kinds {
			if k != s3mem.Conflict {
				b.Faults = append(b.Faults, k)
			}
		}
	}
	explore(t, b)
}

// TestExploreConflictOnComplete: a 409 ConditionalRequestConflict at every
// release (only a completion can meet one). The committer once aborted the
// token's own upload on a 409, losing the file; the explorer named that
// schedule (step13-conflict) until it was fixed. All three orders with
// S3ONCE_EXPLORE=wide.
func TestExploreConflictOnComplete(t *testing.T) {
	b := Bounds{Faults: []s3mem.Kind{s3mem.Conflict}, Ops: []s3mem.Op{s3fault.CompleteMultipartUpload}}
	if os.Getenv("S3ONCE_EXPLORE") == "wide" {
		b = Bounds{Faults: []s3mem.Kind{s3mem.Conflict}, Orders: Orders}
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

func explore(t *testing.T, b Bounds) {
	start := time.Now()
	report(t, "one", b, Explore(t, DefaultStream(), b), start, true)
}

// report fails the test on the first violations, checks the faults bit
// (some schedule needed an extra attempt) when bite is set, and prints how
// many schedules were explored within which bounds.
func report(t *testing.T, workload string, b Bounds, results []Result, start time.Time, bite bool) {
	t.Helper()
	failed, recovered := 0, 0
	for _, r := range results {
		if r.Attempts > results[0].Attempts {
			recovered++
		}
		if len(r.Violations) > 0 {
			failed++
			if failed <= 2 {
				t.Errorf("%s", r)
			}
		}
	}
	if bite && recovered == 0 {
		t.Fatal("no schedule needed more attempts than the fault-free one: the faults never bit")
	}
	t.Logf("workload %s: explored %d schedules (%s) in %v; %d recovered in an extra attempt, %d with violations",
		workload, len(results), b, time.Since(start).Round(time.Millisecond), recovered, failed)
}

// TestExploreDuplicateCommit: the file is committed by two committers at
// once (the fast path and the commit stage, each with a client of its own).
// Released alternately, both completions are held at the server together,
// so the one applied first meets 409 while the other is in flight; both
// must still report success, and every check must hold. With
// S3ONCE_EXPLORE=wide, also under one fault at every release.
func TestExploreDuplicateCommit(t *testing.T) {
	w := DefaultStream()
	w.duplicateCommit = true
	conflicts := 0
	for _, o := range Orders {
		res := RunSchedule(t, w, Plan{Order: o})
		if len(res.Violations) > 0 || len(res.Errors) > 0 {
			t.Errorf("fault-free duplicate commit: %s", res)
		}
		conflicts += res.Conflicts
	}
	if conflicts == 0 {
		t.Fatal("no order held both completions at once: the race was not exercised")
	}
	if os.Getenv("S3ONCE_EXPLORE") == "wide" {
		start := time.Now()
		results := Explore(t, w, Bounds{Faults: quickFaults, Orders: []Order{Alternate}})
		for _, r := range results {
			if len(r.Violations) > 0 {
				t.Errorf("%s", r)
			}
		}
		t.Logf("explored %d duplicate-commit schedules in %v", len(results), time.Since(start).Round(time.Millisecond))
	}
}
