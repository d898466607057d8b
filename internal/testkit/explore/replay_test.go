package explore

import (
	"os"
	"testing"

	"github.com/s3once/s3once/internal/mutant"
	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// TestReplay runs one schedule named by S3ONCE_REPLAY (a plan as printed,
// e.g. step05-late+step09-crash-before-send or step07@1) on the workload
// S3ONCE_REPLAY_WORKLOAD names (one, one-duplicate, issue), with
// S3ONCE_REPLAY_BUG=<bug> for a mutant (a build with -tags s3once_mutant);
// every failing schedule prints its
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
		b, err := mutant.Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Bug = b
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
