package sink

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
)

// tracker claims a restriction's records one at a time, in order.
//
// It splits only where the writer asks it to: when the writer stops at a
// sync point to checkpoint, it arms the tracker with the residual (the rest
// of the records and the open file's token), and the runner's TrySplit(0)
// that follows hands it back. Every other split is refused with a nil
// residual and a nil error, because a residual needs a token that only the
// writer can make, at a point of its choosing. (Refusing is what runners
// expect; prism fails the bundle on a split error.)
type tracker struct {
	rest  restriction
	next  int64        // the next record to claim
	armed *restriction // the residual of a pending self-checkpoint
	err   error
}

func newTracker(r restriction) *tracker { return &tracker{rest: r, next: r.Start} }

// TryClaim claims record pos, which must be the next one (an int64). It
// returns false at the end of the restriction, after a self-checkpoint was
// armed, or on misuse (see GetError).
func (t *tracker) TryClaim(pos any) bool {
	if t.err != nil {
		return false
	}
	i, ok := pos.(int64)
	switch {
	case !ok:
		t.err = fmt.Errorf("s3once sink: tracker claims int64 record indices, not %T", pos)
		return false
	case i != t.next:
		t.err = fmt.Errorf("s3once sink: tracker: claimed record %d, the next one is %d", i, t.next)
		return false
	case t.armed != nil:
		t.err = fmt.Errorf("s3once sink: tracker: claimed record %d after arming a checkpoint", i)
		return false
	case i >= t.rest.End:
		return false
	}
	t.next++
	return true
}

// arm makes the next TrySplit(0) return r as the residual.
func (t *tracker) arm(r restriction) error {
	if r.Start != t.next || r.End != t.rest.End {
		return fmt.Errorf("s3once sink: tracker: residual %v does not continue at record %d up to %d", r, t.next, t.rest.End)
	}
	t.armed = &r
	return nil
}

func (t *tracker) GetError() error { return t.err }

// TrySplit splits off the armed residual when fraction is 0; otherwise, or
// when nothing is armed, it refuses: the primary is the whole restriction and
// the residual nil.
func (t *tracker) TrySplit(fraction float64) (primary, residual any, err error) {
	if fraction != 0 || t.armed == nil || t.err != nil {
		return t.rest, nil, nil
	}
	res := *t.armed
	t.armed = nil
	t.rest.End = t.next
	return t.rest, res, nil
}

// GetProgress counts records.
func (t *tracker) GetProgress() (done, remaining float64) {
	return float64(t.next - t.rest.Start), float64(t.rest.End - t.next)
}

// IsDone reports whether every record of the (possibly split) restriction is
// claimed.
func (t *tracker) IsDone() bool { return t.err == nil && t.next >= t.rest.End }

func (t *tracker) GetRestriction() any { return t.rest }

// IsBounded: a batch is finite.
func (t *tracker) IsBounded() bool { return true }

var _ sdf.BoundableRTracker = (*tracker)(nil)

// armTracker arms the tracker behind rt.
func armTracker(rt *sdf.LockRTracker, r restriction) error {
	rt.Mu.Lock()
	defer rt.Mu.Unlock()
	t, ok := rt.Rt.(*tracker)
	if !ok {
		return fmt.Errorf("s3once sink: unexpected restriction tracker %T", rt.Rt)
	}
	return t.arm(r)
}
