package explore

import (
	"os"
	"strings"
	"testing"

	"github.com/s3once/s3once/internal/mutant"
	"github.com/s3once/s3once/internal/s3fault"
	"github.com/s3once/s3once/internal/s3mem"
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

// TestReplay runs one schedule named by S3ONCE_REPLAY (a plan as printed,
// e.g. step05-late+step09-crash-before-send or step07@1) on the workload
// S3ONCE_REPLAY_WORKLOAD names (one, one-duplicate, issue), with
// S3ONCE_REPLAY_BUG=<bug> for a mutant; every failing schedule prints its
// replay command. Skipped when S3ONCE_REPLAY is unset.
func TestReplay(t *testing.T) {
	spec := os.Getenv("S3ONCE_REPLAY")
	if spec == "" {
		t.Skip("S3ONCE_REPLAY names no schedule")
	}
	p, err := ParsePlan(spec)
	if err != nil {
		t.Fatal(err)
	}
	w, err := WorkloadNamed(os.Getenv("S3ONCE_REPLAY_WORKLOAD"))
	if err != nil {
		t.Fatal(err)
	}
	if name := os.Getenv("S3ONCE_REPLAY_BUG"); name != "" {
		for _, b := range []mutant.Bug{mutant.AbortOn409, mutant.DropTail, mutant.ShortSettle, mutant.ReusePersistKey} {
			if b.String() == name {
				w.Bug = b
			}
		}
		if w.Bug == 0 {
			t.Fatalf("unknown bug %q", name)
		}
	}
	r := RunSchedule(t, w, p)
	t.Logf("%s", r)
	if len(r.Violations) > 0 || len(r.Misfits) > 0 {
		t.Fail()
	}
}

// TestParsePlan: every plan reads back from its printed form, and what is
// not a plan is refused.
func TestParsePlan(t *testing.T) {
	for _, p := range []Plan{{}, {Sweep: true}, faultAt(13, s3mem.Conflict),
		{Choices: []Choice{{Step: 3, Pick: 1}, {Step: 5, Pick: -1, Fault: s3mem.Late}, {Step: 11, Pick: 0, Fault: s3mem.CrashLagged}}, Sweep: true}} {
		got, err := ParsePlan(p.String())
		if err != nil || !got.Equal(p) {
			t.Errorf("ParsePlan(%q) = %+v, %v; want %+v", p, got, err, p)
		}
	}
	for _, bad := range []string{"", "step1", "stepx-late", "step3-nope", "step0-late", "step3@x", "step3@1-", "step5-late+step2-late", "step2@1+step2-late", "default/first", "first"} {
		if p, err := ParsePlan(bad); err == nil {
			t.Errorf("ParsePlan(%q) accepted: %s", bad, p)
		}
	}
}
