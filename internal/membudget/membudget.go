// Package membudget is a worker's memory budget: bytes reserved against a
// capacity, by callers that reserve without waiting where they hold memory
// already, and wait only while they hold none, which keeps a budget free
// of deadlock however its callers nest. The sink keeps one per process
// (Config.MaxWorkerMemory), shared by the batches its Batch stage gathers,
// the batches its writer holds and the buffers of the files it writes.
//
// Waiters are served in order, and a reservation without waiting fails
// while anybody waits, so that a large wait is not starved by small
// reservations. A need above what the pinned reservations (Hold) leave of
// the capacity is clamped to the whole capacity (Fit) and served once
// nothing but the pinned part is reserved: it waits, but it is never
// refused for good. A nil *Budget reserves nothing and never waits.
package membudget

import (
	"context"
	"sync"
)

// Budget is a memory budget. Its zero value has no capacity (it reserves
// without limit) until Limit sets one.
type Budget struct {
	// The hooks, set before the budget is used.
	//
	// Waited, when not nil, is called each time Acquire waits in line,
	// before it waits.
	Waited func(ctx context.Context)
	// Clamped, when not nil, is called the first time Fit clamps a need,
	// with what needs it, the need, and what the pinned reservations leave
	// of the capacity.
	Clamped func(ctx context.Context, what string, need, left int64)

	mu       sync.Mutex
	capacity int64 // 0 until Limit sets it
	used     int64
	pinned   int64 // of used, held for good (Hold)
	peak     int64
	queue    []*waiter
	clamped  bool // a need above the capacity was clamped (reported once)
}

type waiter struct {
	n     int64
	ready chan struct{}
}

// Limit makes c the capacity if it is the smallest seen; c <= 0 is no
// limit.
func (m *Budget) Limit(c int64) {
	if c <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.capacity == 0 || c < m.capacity {
		m.capacity = c
	}
}

// Fit clamps a need to the capacity: a need above what the pinned
// reservations leave of it takes the whole capacity, which is reserved
// once nothing else is (see Acquire), and is reported once (Clamped).
func (m *Budget) Fit(ctx context.Context, n int64, what string) int64 {
	if m == nil {
		return n
	}
	m.mu.Lock()
	left, whole, report := m.capacity-m.pinned, m.capacity, false
	if m.capacity > 0 && n > left {
		report, m.clamped = !m.clamped, true
	}
	m.mu.Unlock()
	if whole <= 0 || n <= left {
		return n
	}
	if report && m.Clamped != nil {
		m.Clamped(ctx, what, n, max(left, 0))
	}
	return whole
}

// TryAcquire reserves n bytes if they are free and nobody waits.
func (m *Budget) TryAcquire(n int64) bool {
	if m == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.capacity > 0 && (len(m.queue) > 0 || !m.fits(n)) {
		return false
	}
	m.take(n)
	return true
}

// Acquire reserves n bytes (at most the capacity: see Fit), waiting in
// line until they are free. The caller must hold no reservation of its
// own. A cancelled wait reserves nothing and returns ctx's error.
func (m *Budget) Acquire(ctx context.Context, n int64) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	if m.capacity <= 0 || (len(m.queue) == 0 && m.fits(n)) {
		m.take(n)
		m.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	m.queue = append(m.queue, w)
	m.mu.Unlock()
	if m.Waited != nil {
		m.Waited(ctx)
	}
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		m.used -= n
	default:
		for i, q := range m.queue {
			if q == w {
				m.queue = append(m.queue[:i], m.queue[i+1:]...)
				break
			}
		}
	}
	m.grant()
	return ctx.Err()
}

// Release gives n reserved bytes back.
func (m *Budget) Release(n int64) {
	if m == nil || n == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= n
	m.grant()
}

// Hold reserves n bytes for good, whatever is free: memory a worker keeps
// while idle, such as a shared stream writer's part buffers.
func (m *Budget) Hold(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.take(n)
	m.pinned += n
}

// Usage is a budget's state at one instant.
type Usage struct {
	Capacity int64 // 0 for none
	Used     int64 // reserved now, Pinned included
	Pinned   int64 // reserved for good (Hold)
	Peak     int64 // the most Used has been
}

// Usage returns the budget's state.
func (m *Budget) Usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Usage{Capacity: m.capacity, Used: m.used, Pinned: m.pinned, Peak: m.peak}
}

// fits reports whether n bytes can be reserved now: they are free, or
// nothing but the pinned reservations is, so that a need the capacity
// cannot hold beside them (see Fit) is served once the worker is otherwise
// idle, never refused for good; m.mu is held.
func (m *Budget) fits(n int64) bool {
	return m.used+n <= m.capacity || m.used <= m.pinned
}

// take reserves n; m.mu is held.
func (m *Budget) take(n int64) {
	m.used += n
	m.peak = max(m.peak, m.used)
}

// grant serves the waiters in line whose need is now free; m.mu is held.
func (m *Budget) grant() {
	for len(m.queue) > 0 {
		w := m.queue[0]
		if !m.fits(w.n) {
			return
		}
		m.take(w.n)
		close(w.ready)
		m.queue = m.queue[1:]
	}
}
