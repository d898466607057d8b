package explore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing/synctest"

	"github.com/s3once/s3once/internal/s3mem"
)

// Plan is the choices of one schedule: which released request meets which
// fault, and in what order held requests are released.
type Plan struct {
	// Step is the 1-based release that meets Fault; 0 means no fault.
	Step  int
	Fault s3mem.Kind
	// Step2 and Fault2 are a second fault, at a later release (0: none).
	Step2  int
	Fault2 s3mem.Kind
	// Order picks which held request is released at each quiescent point.
	Order Order
}

// Order is a release policy.
type Order int

// The release policies. Held requests are sorted by client, operation, key,
// upload and part.
const (
	// First releases the request that sorts first.
	First Order = iota
	// Last releases the request that sorts last.
	Last
	// Alternate releases the first request of another client than the one
	// released before, if any is held: concurrent clients interleave.
	Alternate
)

// Orders lists every release policy.
var Orders = []Order{First, Last, Alternate}

func (o Order) String() string {
	switch o {
	case First:
		return "first"
	case Last:
		return "last"
	case Alternate:
		return "alternate"
	}
	return fmt.Sprintf("order(%d)", int(o))
}

func (p Plan) String() string {
	if p.Step == 0 {
		return "no-fault/" + p.Order.String()
	}
	f := fmt.Sprintf("step%02d-%s", p.Step, p.Fault)
	if p.Step2 > 0 {
		f += fmt.Sprintf("+step%02d-%s", p.Step2, p.Fault2)
	}
	return f + "/" + p.Order.String()
}

// ParsePlan reads a Plan back from its String form, for replays.
func ParsePlan(s string) (Plan, error) {
	var p Plan
	faults, order, ok := strings.Cut(s, "/")
	if !ok {
		return p, fmt.Errorf("plan %q: want faults/order", s)
	}
	found := false
	for _, o := range Orders {
		if o.String() == order {
			p.Order, found = o, true
		}
	}
	if !found {
		return p, fmt.Errorf("plan %q: unknown order %q", s, order)
	}
	if faults == "no-fault" {
		return p, nil
	}
	for i, f := range strings.Split(faults, "+") {
		var step int
		var name string
		if n, err := fmt.Sscanf(f, "step%d-", &step); n != 1 || err != nil || i > 1 {
			return p, fmt.Errorf("plan %q: bad fault %q", s, f)
		}
		_, name, _ = strings.Cut(f, "-")
		k, err := kindNamed(name)
		if err != nil {
			return p, fmt.Errorf("plan %q: %w", s, err)
		}
		if i == 0 {
			p.Step, p.Fault = step, k
		} else {
			p.Step2, p.Fault2 = step, k
		}
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

// scheduler holds every request of the workload's clients at the Fake's Gate
// and releases one at a time, when all goroutines of the bubble are blocked,
// so a schedule is a deterministic sequence of releases.
type scheduler struct {
	plan    Plan
	arrived chan struct{}

	mu      sync.Mutex
	pending []*held
	steps   int
	trace   []string
	ops     []s3mem.Op // of each release
	last    string     // client of the last release
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
	return fmt.Sprintf("%s|%s|%s|%s|%05d", c.Client, c.Op, c.Key, c.UploadID, c.Part)
}

// pick removes and returns the held request to release next, or nil.
func (s *scheduler) pick() *held {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	sort.Slice(s.pending, func(i, j int) bool { return orderKey(s.pending[i].call) < orderKey(s.pending[j].call) })
	i := 0
	switch s.plan.Order {
	case Last:
		i = len(s.pending) - 1
	case Alternate:
		for j, h := range s.pending {
			if h.call.Client != s.last {
				i = j
				break
			}
		}
	}
	h := s.pending[i]
	s.pending = append(s.pending[:i], s.pending[i+1:]...)
	s.last = h.call.Client
	return h
}

// drive releases held requests one at a time until done is closed and
// nothing is held. It must run inside the bubble, on the test's goroutine.
// When nothing is held and the workload is not done, it blocks, so the
// bubble's clock can move on to the next timer (a backoff, a timeout).
func (s *scheduler) drive(done <-chan struct{}) {
	for {
		synctest.Wait()
		h := s.pick()
		if h == nil {
			select {
			case <-done:
				synctest.Wait()
				if h = s.pick(); h == nil {
					return
				}
			case <-s.arrived:
				continue
			}
		}
		s.steps++
		var k s3mem.Kind
		switch s.steps {
		case s.plan.Step:
			k = s.plan.Fault
		case s.plan.Step2:
			k = s.plan.Fault2
		}
		c := h.call
		line := fmt.Sprintf("%d %s %s %s", s.steps, c.Client, c.Op, c.Key)
		if c.Part > 0 {
			line += fmt.Sprintf(" part %d", c.Part)
		}
		if k != 0 {
			line += " <- " + k.String()
		}
		s.trace = append(s.trace, line)
		s.ops = append(s.ops, c.Op)
		h.release <- k
	}
}
