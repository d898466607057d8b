package explore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/mutant"
	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// Result is one schedule: its plan, how many requests it released, its
// trace, and what its checks found.
type Result struct {
	Plan     Plan
	Workload string
	Steps    int
	Attempts int
	// Rewrites counts files written again from their first byte after a
	// recovery found their checkpoint's artifacts gone.
	Rewrites int
	// Conflicts counts the 409s the server gave for completions in flight
	// together.
	Conflicts  int
	Errors     []string
	Violations []string
	Trace      []string
	// Preemptions counts the releases that preempted a client still
	// holding a request.
	Preemptions int
	// Sweeps counts the sweeps run between steps.
	Sweeps int
	// points are the alternatives at each release; Misfits the choices
	// that named a request beyond those held (a replay of another code).
	points  []point
	Misfits []string
	// Replay is the command that runs this schedule again.
	Replay string
}

func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule %s of workload %s: %d releases, %d preemptions, %d attempts, %d rewrites, %d conflicts, %d sweeps between steps\n", r.Plan, r.Workload, r.Steps, r.Preemptions, r.Attempts, r.Rewrites, r.Conflicts, r.Sweeps)
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  violation: %s\n", v)
	}
	for _, m := range r.Misfits {
		fmt.Fprintf(&b, "  the plan does not fit the run: %s\n", m)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "  attempt error: %s\n", e)
	}
	fmt.Fprintf(&b, "  replay: %s\n", r.Replay)
	b.WriteString("  trace:\n")
	for _, l := range r.Trace {
		fmt.Fprintf(&b, "    %s\n", l)
	}
	return b.String()
}

// RunSchedule runs the workload once under plan, inside a synctest bubble of
// its own (fake time: backoffs and call timeouts cost nothing), then checks
// it. It must be called from a test goroutine outside any bubble.
func RunSchedule(t *testing.T, w StreamWorkload, plan Plan) Result {
	var res Result
	if w.Bug != 0 {
		if !mutant.Enabled {
			t.Fatalf("workload %s switches %s on, which needs a build with -tags s3once_mutant", w.Name(), w.Bug)
		}
		defer mutant.Set(w.Bug)()
	}
	var fake *s3mem.Fake
	// Every goroutine of the bubble has ended when synctest.Test returns:
	// nothing reads the Fake's bytes any more, and the next schedule may
	// reuse them.
	defer func() {
		if fake != nil {
			fake.Release()
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		sch := newScheduler(plan)
		fake = s3mem.New(s3mem.Options{PageSize: 2, Gate: sch.gate})
		bucket := fake.Bucket()
		setup := fake.NewClient(s3mem.ClientOptions{Name: "setup"})
		decoys := decoysFor(FileKey(0, len(w.Data)))
		for k, v := range decoys {
			if _, err := setup.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(k), Body: strings.NewReader(string(v))}); err != nil {
				t.Fatalf("decoy %s: %v", k, err)
			}
		}
		r := newRunner(w, fake, bucket)
		sweeps := 0
		if plan.Sweep {
			start := fake.Now()
			sch.between = func(step int) {
				sweeps++
				r.sweepBetween(context.Background(), step, start)
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.run()
		}()
		sch.drive(done)
		for _, c := range plan.Choices {
			if c.Step > sch.steps {
				sch.misfits = append(sch.misfits, fmt.Sprintf("step %d: the run made %d releases", c.Step, sch.steps))
			}
		}
		r.check(context.Background(), decoys)
		res = Result{Plan: plan, Workload: w.Name(), Steps: sch.steps, Attempts: r.out.attempts, Rewrites: r.out.rewrites, Conflicts: fake.Conflicts(), Errors: r.out.errs, Violations: r.out.violations, Trace: sch.trace, Replay: replayCommand(w, plan),
			Preemptions: sch.preemptions, Sweeps: sweeps, points: sch.points, Misfits: sch.misfits}
	})
	return res
}

// Bounds say which schedules Explore enumerates.
type Bounds struct {
	// Preemptions is the most preemptions a schedule may make: releases of
	// a request of another client than the one released last while that
	// one still holds a request.
	Preemptions int
	// Picks is the most departures from the default release a schedule
	// may make, preempting or not (a delay bound): 0 keeps the default
	// order, a negative value leaves Preemptions alone to bound orderings.
	Picks int
	// Faults are the fates tried as a schedule's first fault, at every
	// release of every ordering.
	Faults []s3mem.Kind
	// Second, if any, are the fates tried as a second fault at every later
	// release: two faults per schedule at most.
	Second []s3mem.Kind
	// Ops, if any, limit the first fault to releases of these operations;
	// SecondOps the second.
	Ops, SecondOps []s3mem.Op
	// Sweep runs a sweep at every quiescent point of every schedule.
	Sweep bool
}

func (b Bounds) String() string {
	faults := 0
	switch {
	case len(b.Second) > 0:
		faults = 2
	case len(b.Faults) > 0:
		faults = 1
	}
	where := "every release"
	if len(b.Ops) > 0 {
		where = fmt.Sprintf("every release of %v", b.Ops)
	}
	s := fmt.Sprintf("preemption bound %d", b.Preemptions)
	switch {
	case b.Picks == 0:
		s = "the default order"
	case b.Picks > 0:
		s += fmt.Sprintf(", at most %d departure(s) from the default release", b.Picks)
	}
	s += fmt.Sprintf("; at most %d fault(s) per schedule", faults)
	if faults > 0 {
		s += fmt.Sprintf(": %v at %s", b.Faults, where)
	}
	if faults == 2 {
		where = "every later release"
		if len(b.SecondOps) > 0 {
			where = fmt.Sprintf("every later release of %v", b.SecondOps)
		}
		s += fmt.Sprintf(", then %v at %s", b.Second, where)
	}
	if b.Sweep {
		s += "; a sweep at every quiescent point"
	}
	return s
}

// Explore enumerates the schedules within the bounds, depth first, and
// returns every result, the default schedule first. A schedule departs from
// the default at chosen releases: which held request is released (a
// release that preempts the client released last counts against
// Preemptions) and which fate it meets (Faults, then Second). Each
// schedule run yields its own alternatives at every release after its last
// departure, so every sequence of choices within the bounds runs once.
func Explore(t *testing.T, w StreamWorkload, b Bounds) []Result {
	var all []Result
	stack := []Plan{{Sweep: b.Sweep}}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		r := RunSchedule(t, w, p)
		all = append(all, r)
		if len(r.Misfits) > 0 {
			t.Fatalf("schedule %s: its choices do not fit the run: %v", p, r.Misfits)
		}
		var fates []s3mem.Kind
		ops := b.Ops
		switch p.Faults() {
		case 0:
			fates = b.Faults
		case 1:
			fates, ops = b.Second, b.SecondOps
		}
		picks := 0
		for _, c := range p.Choices {
			if c.Pick >= 0 {
				picks++
			}
		}
		var next []Plan
		for step := p.lastStep() + 1; step <= len(r.points); step++ {
			pt := r.points[step-1]
			for i, c := range pt.calls {
				cost := pt.before
				if pt.preempts[i] {
					cost++
				}
				if cost > b.Preemptions {
					continue
				}
				pick := i
				if i == pt.def {
					pick = -1
				} else if b.Picks >= 0 && picks >= b.Picks {
					continue
				} else {
					next = append(next, p.with(Choice{Step: step, Pick: pick}))
				}
				if len(ops) > 0 && !slices.Contains(ops, c.Op) {
					continue
				}
				for _, k := range fates {
					next = append(next, p.with(Choice{Step: step, Pick: pick, Fault: k}))
				}
			}
		}
		// Depth first, in release order: push the last alternative first.
		for i := len(next) - 1; i >= 0; i-- {
			stack = append(stack, next[i])
		}
	}
	return all
}

// replayCommand is the shell command that runs one schedule again (see
// TestReplay).
func replayCommand(w StreamWorkload, p Plan) string {
	env := fmt.Sprintf("S3ONCE_REPLAY=%s S3ONCE_REPLAY_WORKLOAD=%s", p, w.Name())
	tags := ""
	if w.Bug != 0 {
		env += fmt.Sprintf(" S3ONCE_REPLAY_BUG=%s", w.Bug)
		tags = " -tags s3once_mutant"
	}
	return env + " go test -count=1" + tags + " -run '^TestReplay$' -v ./internal/testkit/explore/"
}
