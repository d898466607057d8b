//go:build s3once_mutant

package explore

import (
	"strings"
	"testing"

	"github.com/s3once/s3once/internal/mutant"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// Each past bug, switched back on through internal/mutant, must be caught
// by the explorer, in a schedule it names, on every run; the same schedule
// with the bug off must pass. The schedules are searched in a fixed order
// and the search stops at the first that catches the bug.

// caughtBy runs plans in order with bug on until one yields a violation
// containing want, then checks that the same plan passes with the bug off.
func caughtBy(t *testing.T, w StreamWorkload, bug mutant.Bug, want string, plans []Plan) {
	t.Helper()
	buggy := w
	buggy.Bug = bug
	for _, p := range plans {
		r := RunSchedule(t, buggy, p)
		hit := ""
		for _, v := range r.Violations {
			if strings.Contains(v, want) {
				hit = v
				break
			}
		}
		if hit == "" {
			continue
		}
		t.Logf("%s caught by schedule %s: %s\n  %s", bug, r.Plan, hit, r.Replay)
		if clean := RunSchedule(t, w, p); len(clean.Violations) > 0 {
			t.Fatalf("the schedule that caught %s fails without it too:\n%s", bug, clean)
		}
		return
	}
	t.Fatalf("no schedule of %d caught %s (want a violation saying %q)", len(plans), bug, want)
}

// releasesOf returns the 1-based releases of the fault-free schedule whose
// trace line contains every one of words.
func releasesOf(t *testing.T, w StreamWorkload, words ...string) []int {
	t.Helper()
	base := RunSchedule(t, w, Plan{})
	var steps []int
next:
	for i, line := range base.Trace {
		for _, word := range words {
			if !strings.Contains(line, word) {
				continue next
			}
		}
		steps = append(steps, i+1)
	}
	if len(steps) == 0 {
		t.Fatalf("no release of the fault-free schedule matches %q:\n%s", words, base)
	}
	return steps
}

// TestMutantAbortOn409: the committer once aborted the token's own upload
// when a completion met 409 ConditionalRequestConflict. A 409 on the
// completion is caught: the upload a checkpoint references is aborted and
// the file never committed.
func TestMutantAbortOn409(t *testing.T) {
	w := DefaultStream()
	var plans []Plan
	for _, s := range releasesOf(t, w, string(s3fault.CompleteMultipartUpload)) {
		plans = append(plans, faultAt(s, s3mem.Conflict))
	}
	caughtBy(t, w, mutant.AbortOn409, "which a checkpoint references", plans)
}

// TestMutantDropTail: recovery that forgets the token's tail (Flink's
// writer on its recover-for-commit path). A crash before a persist's
// side-object PUT, then a recovery from the persist before, leaves a file
// short of that token's tail.
func TestMutantDropTail(t *testing.T) {
	w := DefaultStream()
	var plans []Plan
	for _, s := range releasesOf(t, w, string(s3fault.PutObject), ".s3once/staging/s3mem-upload") {
		plans = append(plans, faultAt(s, s3mem.CrashBeforeSend))
	}
	caughtBy(t, w, mutant.DropTail, "the run wrote", plans)
}

// TestMutantShortSettle: a commit that finds the upload gone and the key
// empty once gave up after seconds, not SettleTimeout. A completion whose
// object shows a minute after the upload went (the committing process
// crashed meanwhile) makes the next attempt claim the data lost.
func TestMutantShortSettle(t *testing.T) {
	w := DefaultStream()
	var plans []Plan
	for _, s := range releasesOf(t, w, string(s3fault.CompleteMultipartUpload)) {
		plans = append(plans, faultAt(s, s3mem.CrashLagged))
	}
	caughtBy(t, w, mutant.ShortSettle, "lost, yet it holds the file", plans)
}

// TestMutantReusePersistKey: a failed Persist once gave its side-object key
// to the next Persist. A side-object PUT that fails and lands late, behind
// the next Persist's, then a crash: recovery from the newer token finds the
// older tail and refuses it while the upload is open, and the file has to
// be written again. Two faults.
func TestMutantReusePersistKey(t *testing.T) {
	w := DefaultStream()
	var plans []Plan
	for _, s := range releasesOf(t, w, string(s3fault.PutObject), ".s3once/staging/s3mem-upload") {
		// The Late PUT lands behind the next side-object PUT, two or
		// three releases on; the crash comes after that.
		for s2 := s + 3; s2 <= s+6; s2++ {
			plans = append(plans, faultAt(s, s3mem.Late).with(Choice{Step: s2, Pick: -1, Fault: s3mem.CrashBeforeSend}))
		}
	}
	caughtBy(t, w, mutant.ReusePersistKey, "although its upload", plans)
}

// TestMutantNoThrottleBackoff: without the lanes' backoff and Do's budget,
// a SlowDown on a part upload breaks the stream, and the file needs a
// second attempt (process): the check of TestExploreSlowDown, that a
// SlowDown never costs an attempt, fails on it. The same schedule costs one
// attempt with the bug off.
func TestMutantNoThrottleBackoff(t *testing.T) {
	w := DefaultStream()
	buggy := w
	buggy.Bug = mutant.NoThrottleBackoff
	for _, s := range releasesOf(t, w, string(s3fault.UploadPart)) {
		p := faultAt(s, s3mem.SlowDown)
		r := RunSchedule(t, buggy, p)
		if r.Attempts == 1 {
			continue
		}
		t.Logf("%s caught by schedule %s: %d attempts\n  %s", buggy.Bug, r.Plan, r.Attempts, r.Replay)
		if clean := RunSchedule(t, w, p); clean.Attempts != 1 || len(clean.Violations) > 0 {
			t.Fatalf("the schedule that caught %s costs an attempt without it too:\n%s", buggy.Bug, clean)
		}
		return
	}
	t.Fatalf("no SlowDown on a part upload cost %s an attempt", buggy.Bug)
}
