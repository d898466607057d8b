package membudget

import (
	"context"
	"testing"
	"time"
)

// waitQueued waits until m has n waiters in line.
func waitQueued(t *testing.T, m *Budget, n int) {
	t.Helper()
	for {
		m.mu.Lock()
		q := len(m.queue)
		m.mu.Unlock()
		if q == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMemBudgetInOrder: a waiter is served before later reservations, even
// those that would fit; a cancelled waiter leaves the line and holds
// nothing.
func TestMemBudgetInOrder(t *testing.T) {
	m := &Budget{}
	m.Limit(100)
	m.Limit(200) // the smallest stays
	if !m.TryAcquire(60) {
		t.Fatal("60 of 100 refused")
	}
	got := make(chan error, 1)
	go func() { got <- m.Acquire(context.Background(), 50) }()
	waitQueued(t, m, 1)
	if m.TryAcquire(10) {
		t.Fatal("10 bytes reserved past a waiter in line")
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { gone <- m.Acquire(ctx, 30) }()
	waitQueued(t, m, 2)
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("a cancelled wait returned no error")
	}
	select {
	case err := <-got:
		t.Fatalf("the waiter was served while 60 of 100 were reserved: %v", err)
	default:
	}
	m.Release(60)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if u := m.Usage(); u.Capacity != 100 || u.Used != 50 || u.Peak != 60 {
		t.Fatalf("capacity %d, used %d, peak %d; want 100, 50, 60", u.Capacity, u.Used, u.Peak)
	}
	m.Release(50)
	if u := m.Usage(); u.Used != 0 {
		t.Fatalf("%d bytes reserved after every release", u.Used)
	}
}

// TestMemBudgetOversizeServed: a need larger than what the pinned buffers
// leave of the budget is clamped to the whole budget and served once
// nothing else is reserved, by acquire and by tryAcquire alike: it waits,
// but it is never refused for good.
func TestMemBudgetOversizeServed(t *testing.T) {
	m := &Budget{}
	m.Limit(100)
	m.Hold(40) // a writer's idle part buffers
	need := m.Fit(context.Background(), 500, "a test batch")
	if need != 100 {
		t.Fatalf("fit(500) = %d; want the whole budget, 100", need)
	}
	if !m.TryAcquire(30) {
		t.Fatal("30 of the 60 left refused")
	}
	if m.TryAcquire(need) {
		t.Fatal("the whole budget reserved beside another reservation")
	}
	got := make(chan error, 1)
	go func() { got <- m.Acquire(context.Background(), need) }()
	waitQueued(t, m, 1)
	m.Release(30)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if m.TryAcquire(1) {
		t.Fatal("a reservation beside the whole budget")
	}
	m.Release(need)
	if !m.TryAcquire(need) {
		t.Fatal("tryAcquire refused the whole budget with nothing but the pinned buffers reserved")
	}
	m.Release(need)
	if u := m.Usage(); u.Used != 40 || u.Pinned != 40 {
		t.Fatalf("%d reserved, %d pinned; want the 40 pinned", u.Used, u.Pinned)
	}
}

// TestMemBudgetNil: a nil budget reserves nothing and never waits.
func TestMemBudgetNil(t *testing.T) {
	var m *Budget
	if !m.TryAcquire(1<<40) || m.Acquire(context.Background(), 1<<40) != nil || m.Fit(context.Background(), 7, "x") != 7 {
		t.Fatal("a nil budget refused or changed a need")
	}
	m.Release(1 << 40)
}

// TestClampedReportedOnce: a clamped need is reported to Clamped once,
// with what the pinned reservations leave; every wait is reported to
// Waited before it waits.
func TestClampedReportedOnce(t *testing.T) {
	var clamps []int64
	waits := 0
	m := &Budget{
		Waited:  func(context.Context) { waits++ },
		Clamped: func(_ context.Context, _ string, need, left int64) { clamps = append(clamps, need, left) },
	}
	m.Limit(100)
	m.Hold(30)
	if n := m.Fit(context.Background(), 70, "fits"); n != 70 || len(clamps) != 0 {
		t.Fatalf("Fit(70) = %d with %v reported; want 70, nothing", n, clamps)
	}
	for range 2 {
		if n := m.Fit(context.Background(), 80, "too large"); n != 100 {
			t.Fatalf("Fit(80) = %d, want the whole budget", n)
		}
	}
	if len(clamps) != 2 || clamps[0] != 80 || clamps[1] != 70 {
		t.Fatalf("reported %v, want one clamp of 80 with 70 left", clamps)
	}
	if !m.TryAcquire(70) {
		t.Fatal("70 of the 70 left refused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Acquire(ctx, 10) }()
	waitQueued(t, m, 1)
	cancel()
	if err := <-done; err == nil || waits != 1 {
		t.Fatalf("a cancelled wait: %v, %d waits reported; want an error and 1", err, waits)
	}
}
