package explore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing/synctest"

	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// Plan is one schedule: where it departs from the default release, and
// whether a sweep runs between steps. At each quiescent point the held
// requests are sorted by client, operation, key, upload and part; the
// default release is the first held request of the client released last,
// or the first held request if that client holds none (no preemption).
// Every release not named in Choices is the default one, with no fault.
type Plan struct {
	// Choices are the departures, by increasing Step.
	Choices []Choice
	// Sweep runs the committer's sweep at every quiescent point, before the
	// release, with a cutoff at the run's start (see doc.go).
	Sweep bool
}

// Choice is a departure from the default at one release.
type Choice struct {
	// Step is the 1-based release.
	Step int
	// Pick is the index, among the held requests sorted, of the one
	// released; -1 is the default one.
	Pick int
	// Fault is the fate the released request meets; 0 is none.
	Fault s3mem.Kind
}

// faultAt is the plan of the default order with one fault at release step.
func faultAt(step int, k s3mem.Kind) Plan {
	return Plan{Choices: []Choice{{Step: step, Pick: -1, Fault: k}}}
}

// Faults counts the plan's faults.
func (p Plan) Faults() int {
	n := 0
	for _, c := range p.Choices {
		if c.Fault != 0 {
			n++
		}
	}
	return n
}

// lastStep is the step of the plan's last departure, 0 if none.
func (p Plan) lastStep() int {
	if len(p.Choices) == 0 {
		return 0
	}
	return p.Choices[len(p.Choices)-1].Step
}

// with returns p with c appended (c.Step must follow p's last step).
func (p Plan) with(c Choice) Plan {
	return Plan{Choices: append(slices.Clip(p.Choices), c), Sweep: p.Sweep}
}

// Equal tells whether two plans are the same schedule.
func (p Plan) Equal(q Plan) bool {
	return p.Sweep == q.Sweep && slices.Equal(p.Choices, q.Choices)
}

// String prints the plan as replays read it: "default", or its choices
// joined by "+", each "stepN", then "@i" for a pick other than the
// default, then "-fault" for a fault (step05@1+step13-conflict), with
// "/sweep" appended when sweeps run between steps.
func (p Plan) String() string {
	var parts []string
	for _, c := range p.Choices {
		s := fmt.Sprintf("step%02d", c.Step)
		if c.Pick >= 0 {
			s += fmt.Sprintf("@%d", c.Pick)
		}
		if c.Fault != 0 {
			s += "-" + c.Fault.String()
		}
		parts = append(parts, s)
	}
	s := strings.Join(parts, "+")
	if s == "" {
		s = "default"
	}
	if p.Sweep {
		s += "/sweep"
	}
	return s
}

// ParsePlan reads a Plan back from its String form, for replays.
func ParsePlan(s string) (Plan, error) {
	var p Plan
	body, sweep := strings.CutSuffix(s, "/sweep")
	p.Sweep = sweep
	if body == "default" {
		return p, nil
	}
	for _, f := range strings.Split(body, "+") {
		c := Choice{Pick: -1}
		rest, ok := strings.CutPrefix(f, "step")
		if !ok {
			return p, fmt.Errorf("plan %q: choice %q does not start with step", s, f)
		}
		n := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		step, err := strconv.Atoi(rest[:n])
		if err != nil || step < 1 {
			return p, fmt.Errorf("plan %q: bad step in %q", s, f)
		}
		c.Step, rest = step, rest[n:]
		if r, ok := strings.CutPrefix(rest, "@"); ok {
			n := len(r) - len(strings.TrimLeft(r, "0123456789"))
			if c.Pick, err = strconv.Atoi(r[:n]); err != nil {
				return p, fmt.Errorf("plan %q: bad pick in %q", s, f)
			}
			rest = r[n:]
		}
		if r, ok := strings.CutPrefix(rest, "-"); ok {
			if c.Fault, err = kindNamed(r); err != nil {
				return p, fmt.Errorf("plan %q: %w", s, err)
			}
		} else if rest != "" {
			return p, fmt.Errorf("plan %q: bad choice %q", s, f)
		}
		if c.Pick < 0 && c.Fault == 0 {
			return p, fmt.Errorf("plan %q: choice %q departs from nothing", s, f)
		}
		if c.Step <= p.lastStep() {
			return p, fmt.Errorf("plan %q: steps must increase", s)
		}
		p.Choices = append(p.Choices, c)
	}
	return p, nil
}

func kindNamed(name string) (s3mem.Kind, error) {
	for _, k := range s3mem.Kinds {
		if k.String() == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown fault %q", name)
}

// held is one request waiting at the server for the scheduler.
type held struct {
	call    s3mem.Call
	release chan s3mem.Kind
}

// point is what a schedule could have done at one release: the requests
// held there, sorted, which one is the default, and which ones would have
// cost a preemption.
type point struct {
	calls []s3mem.Call
	def   int
	// preempts[i]: releasing calls[i] preempts the client released last,
	// which still holds a request.
	preempts []bool
	// before is the number of preemptions the schedule made before here.
	before int
}

// scheduler holds every request of the workload's clients at the Fake's Gate
// and releases one at a time, when all goroutines of the bubble are blocked,
// so a schedule is a deterministic sequence of releases.
type scheduler struct {
	plan    Plan
	arrived chan struct{}
	// between, if set, runs at each quiescent point before the release (the
	// sweep), on the driving goroutine.
	between func(step int)

	mu          sync.Mutex
	pending     []*held
	steps       int
	trace       []string
	points      []point
	preemptions int
	misfits     []string // choices that named a pick beyond what was held
	last        string   // client of the last release
}

func newScheduler(p Plan) *scheduler {
	return &scheduler{plan: p, arrived: make(chan struct{}, 1)}
}

// scheduled tells whether the scheduler holds a client's requests: those of
// the workload's attempts, not the harness's own set-up and checks.
func scheduled(client string) bool { return strings.HasPrefix(client, attemptPrefix) }

// gate is the Fake's Gate.
func (s *scheduler) gate(ctx context.Context, c s3mem.Call) (s3mem.Kind, error) {
	if !scheduled(c.Client) {
		return 0, nil
	}
	h := &held{call: c, release: make(chan s3mem.Kind, 1)}
	s.mu.Lock()
	s.pending = append(s.pending, h)
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	select {
	case k := <-h.release:
		return k, nil
	case <-ctx.Done():
		s.mu.Lock()
		s.remove(h)
		s.mu.Unlock()
		return 0, ctx.Err()
	}
}

func (s *scheduler) remove(h *held) {
	for i, p := range s.pending {
		if p == h {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return
		}
	}
}

// orderKey sorts held requests by what they are, not by when they arrived
// (goroutines race to arrive; what is held at a quiescent point does not).
func orderKey(c s3mem.Call) string {
	return fmt.Sprintf("%s|%s|%s|%s|%05d|%d", c.Client, c.Op, c.Key, c.UploadID, c.Part, c.Attempt)
}

// choice is the plan's departure at step, if any.
func (s *scheduler) choice(step int) Choice {
	for _, c := range s.plan.Choices {
		if c.Step == step {
			return c
		}
	}
	return Choice{Step: step, Pick: -1}
}

// pick removes and returns the held request to release at step, and its
// fate, or nil.
func (s *scheduler) pick(step int) (*held, s3mem.Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil, 0
	}
	slices.SortStableFunc(s.pending, func(a, b *held) int { return strings.Compare(orderKey(a.call), orderKey(b.call)) })
	pt := point{def: -1, before: s.preemptions}
	lastHolds := false
	for i, h := range s.pending {
		pt.calls = append(pt.calls, h.call)
		if h.call.Client == s.last {
			lastHolds = true
			if pt.def < 0 {
				pt.def = i
			}
		}
	}
	if pt.def < 0 {
		pt.def = 0
	}
	for _, h := range s.pending {
		pt.preempts = append(pt.preempts, lastHolds && h.call.Client != s.last)
	}
	s.points = append(s.points, pt)
	c := s.choice(step)
	i := pt.def
	if c.Pick >= 0 {
		if c.Pick < len(s.pending) {
			i = c.Pick
		} else {
			s.misfits = append(s.misfits, fmt.Sprintf("step %d picks %d of %d held", step, c.Pick, len(s.pending)))
		}
	}
	if pt.preempts[i] {
		s.preemptions++
	}
	h := s.pending[i]
	s.pending = append(s.pending[:i], s.pending[i+1:]...)
	s.last = h.call.Client
	return h, c.Fault
}

// drive releases held requests one at a time until done is closed and
// nothing is held. It must run inside the bubble, on the test's goroutine.
// When nothing is held and the workload is not done, it blocks, so the
// bubble's clock can move on to the next timer (a backoff, a timeout).
func (s *scheduler) drive(done <-chan struct{}) {
	for {
		synctest.Wait()
		if s.between != nil && s.holding() {
			s.between(s.steps + 1)
			synctest.Wait()
		}
		h, k := s.pick(s.steps + 1)
		if h == nil {
			select {
			case <-done:
				synctest.Wait()
				if h, k = s.pick(s.steps + 1); h == nil {
					return
				}
			case <-s.arrived:
				continue
			}
		}
		s.steps++
		c := h.call
		line := fmt.Sprintf("%d %s %s %s", s.steps, c.Client, c.Op, c.Key)
		if c.Part > 0 {
			line += fmt.Sprintf(" part %d", c.Part)
		}
		if pt := s.points[len(s.points)-1]; len(pt.calls) > 1 {
			line += fmt.Sprintf(" (1 of %d held", len(pt.calls))
			if s.choice(s.steps).Pick >= 0 {
				line += ", not the default"
			}
			line += ")"
		}
		if k != 0 {
			line += " <- " + k.String()
		}
		s.trace = append(s.trace, line)
		h.release <- k
	}
}

// holding tells whether a request is held.
func (s *scheduler) holding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}
