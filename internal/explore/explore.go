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
	"github.com/s3once/s3once/internal/s3mem"
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
	// Ops are the operations of the releases, in order.
	Ops []s3mem.Op
	// Replay is the command that runs this schedule again.
	Replay string
}

func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule %s of workload %s: %d releases, %d attempts, %d rewrites, %d conflicts\n", r.Plan, r.Workload, r.Steps, r.Attempts, r.Rewrites, r.Conflicts)
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  violation: %s\n", v)
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
		defer mutant.Set(w.Bug)()
	}
	synctest.Test(t, func(t *testing.T) {
		sch := newScheduler(plan)
		fake := s3mem.New(s3mem.Options{PageSize: 2, Gate: sch.gate})
		bucket := fake.Bucket()
		setup := fake.NewClient(s3mem.ClientOptions{Name: "setup"})
		decoys := decoysFor(FileKey(0, len(w.Data)))
		for k, v := range decoys {
			if _, err := setup.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(k), Body: strings.NewReader(string(v))}); err != nil {
				t.Fatalf("decoy %s: %v", k, err)
			}
		}
		r := newRunner(w, fake, bucket)
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.run()
		}()
		sch.drive(done)
		r.check(context.Background(), decoys)
		res = Result{Plan: plan, Workload: w.Name(), Steps: sch.steps, Attempts: r.out.attempts, Rewrites: r.out.rewrites, Conflicts: fake.Conflicts(), Errors: r.out.errs, Violations: r.out.violations, Trace: sch.trace, Ops: sch.ops, Replay: replayCommand(w, plan)}
	})
	return res
}

// Bounds say which schedules Explore enumerates.
type Bounds struct {
	// Faults are the fates tried at each release of the fault-free
	// schedule.
	Faults []s3mem.Kind
	// Second, if any, are the fates tried as a second fault at every
	// release after the first fault's, in the schedule the first fault
	// made: two faults per schedule at most.
	Second []s3mem.Kind
	// Orders are the release policies tried; none means First only.
	Orders []Order
	// Ops, if any, limit the first fault to the releases of these
	// operations.
	Ops []s3mem.Op
}

func (b Bounds) String() string {
	orders := b.Orders
	if len(orders) == 0 {
		orders = []Order{First}
	}
	faults := 1
	if len(b.Second) > 0 {
		faults = 2
	}
	where := "every release"
	if len(b.Ops) > 0 {
		where = fmt.Sprintf("every release of %v", b.Ops)
	}
	s := fmt.Sprintf("at most %d fault(s) per schedule; fault %v at %s", faults, b.Faults, where)
	if faults == 2 {
		s += fmt.Sprintf(", then %v at every later release", b.Second)
	}
	return s + fmt.Sprintf("; orders %v", orders)
}

// Explore runs the fault-free schedule, then one schedule per release of
// it, fault and order within the bounds, and with a second fault, one per
// later release of each one-fault schedule. It returns every result.
func Explore(t *testing.T, w StreamWorkload, b Bounds) []Result {
	orders := b.Orders
	if len(orders) == 0 {
		orders = []Order{First}
	}
	var all []Result
	for _, o := range orders {
		base := RunSchedule(t, w, Plan{Order: o})
		all = append(all, base)
		for step := 1; step <= base.Steps; step++ {
			if len(b.Ops) > 0 && !slices.Contains(b.Ops, base.Ops[step-1]) {
				continue
			}
			for _, k := range b.Faults {
				one := RunSchedule(t, w, Plan{Step: step, Fault: k, Order: o})
				all = append(all, one)
				for step2 := step + 1; step2 <= one.Steps; step2++ {
					for _, k2 := range b.Second {
						all = append(all, RunSchedule(t, w, Plan{Step: step, Fault: k, Step2: step2, Fault2: k2, Order: o}))
					}
				}
			}
		}
	}
	return all
}

// replayCommand is the shell command that runs one schedule again (see
// TestReplay).
func replayCommand(w StreamWorkload, p Plan) string {
	env := fmt.Sprintf("S3ONCE_REPLAY=%s S3ONCE_REPLAY_WORKLOAD=%s", p, w.Name())
	if w.Bug != 0 {
		env += fmt.Sprintf(" S3ONCE_REPLAY_BUG=%s", w.Bug)
	}
	return env + " go test -count=1 -run '^TestReplay$' -v ./internal/explore/"
}
