package sink

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// waitQueued waits until m has n waiters in line.
func waitQueued(t *testing.T, m *memBudget, n int) {
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
	m := &memBudget{}
	m.limit(100)
	m.limit(200) // the smallest stays
	if !m.tryAcquire(60) {
		t.Fatal("60 of 100 refused")
	}
	got := make(chan error, 1)
	go func() { got <- m.acquire(context.Background(), 50) }()
	waitQueued(t, m, 1)
	if m.tryAcquire(10) {
		t.Fatal("10 bytes reserved past a waiter in line")
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { gone <- m.acquire(ctx, 30) }()
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
	m.release(60)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if capacity, used, peak := m.state(); capacity != 100 || used != 50 || peak != 60 {
		t.Fatalf("capacity %d, used %d, peak %d; want 100, 50, 60", capacity, used, peak)
	}
	m.release(50)
	if _, used, _ := m.state(); used != 0 {
		t.Fatalf("%d bytes reserved after every release", used)
	}
}

// TestMemBudgetOversizeServed: a need larger than what the pinned buffers
// leave of the budget is clamped to the whole budget and served once
// nothing else is reserved, by acquire and by tryAcquire alike: it waits,
// but it is never refused for good.
func TestMemBudgetOversizeServed(t *testing.T) {
	m := &memBudget{}
	m.limit(100)
	m.hold(40) // a writer's idle part buffers
	need := m.fit(context.Background(), 500, "a test batch")
	if need != 100 {
		t.Fatalf("fit(500) = %d; want the whole budget, 100", need)
	}
	if !m.tryAcquire(30) {
		t.Fatal("30 of the 60 left refused")
	}
	if m.tryAcquire(need) {
		t.Fatal("the whole budget reserved beside another reservation")
	}
	got := make(chan error, 1)
	go func() { got <- m.acquire(context.Background(), need) }()
	waitQueued(t, m, 1)
	m.release(30)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if m.tryAcquire(1) {
		t.Fatal("a reservation beside the whole budget")
	}
	m.release(need)
	if !m.tryAcquire(need) {
		t.Fatal("tryAcquire refused the whole budget with nothing but the pinned buffers reserved")
	}
	m.release(need)
	if _, used, _ := m.state(); used != 40 {
		t.Fatalf("%d reserved; want the 40 pinned", used)
	}
}

// TestMemBudgetNil: a nil budget reserves nothing and never waits.
func TestMemBudgetNil(t *testing.T) {
	var m *memBudget
	if !m.tryAcquire(1<<40) || m.acquire(context.Background(), 1<<40) != nil || m.fit(context.Background(), 7, "x") != 7 {
		t.Fatal("a nil budget refused or changed a need")
	}
	m.release(1 << 40)
}

// TestGatherUnderBudget: many groups gathered at once under a budget that
// holds about two of them, each batch handed to a stand-in for the fused
// writer that reserves the batch's memory without waiting and defers it
// when the budget is short (as the writer DoFn does). Every group finishes
// (nothing waits while it holds memory, so nothing deadlocks), the batches
// are those gathered without a budget, and the reservations never exceed
// the budget.
func TestGatherUnderBudget(t *testing.T) {
	const (
		groups = 12
		limit  = 256 << 10
	)
	recs := func(g int) [][]byte {
		r := rand.New(rand.NewPCG(uint64(g), 7))
		n := 500 + r.IntN(3000) // up to about 2 x limit
		out := make([][]byte, n)
		for i := range out {
			out[i] = fmt.Appendf(nil, "group %d record %d %s\n", g, i, bytes.Repeat([]byte{'x'}, r.IntN(300)))
		}
		return out
	}
	collect := func(budget *memBudget, g int, deferred *[]batch, mu *sync.Mutex) ([]batch, error) {
		var out []batch
		in := recs(g)
		i := 0
		head := batch{Destination: fmt.Sprint(g), Window: "global", Shard: 0, Shards: 1, SubBatches: 1}
		err := gather(context.Background(), budget, head, limit, func(l *[]byte) bool {
			if i == len(in) {
				return false
			}
			*l = in[i]
			i++
			return true
		}, nil, func(b batch) {
			b.Lines = slices.Clone(b.Lines)
			out = append(out, b)
			need := budget.fit(context.Background(), 2*recordBytes(b.Lines), "a batch")
			if !budget.tryAcquire(need) {
				mu.Lock()
				*deferred = append(*deferred, b)
				mu.Unlock()
				return
			}
			budget.release(need)
		})
		return out, err
	}

	want := make([][]batch, groups)
	for g := range groups {
		var err error
		if want[g], err = collect(nil, g, new([]batch), &sync.Mutex{}); err != nil {
			t.Fatal(err)
		}
	}

	budget := &memBudget{}
	budget.limit(3 * limit)
	got := make([][]batch, groups)
	errs := make([]error, groups)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		deferred []batch
	)
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[g], errs[g] = collect(budget, g, &deferred, &mu)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("the groups did not finish: a deadlock")
	}
	for g := range groups {
		if errs[g] != nil {
			t.Fatalf("group %d: %v", g, errs[g])
		}
		if len(got[g]) != len(want[g]) {
			t.Fatalf("group %d: %d batches under the budget, %d without", g, len(got[g]), len(want[g]))
		}
		for j := range got[g] {
			a, b := got[g][j], want[g][j]
			if a.SubBatch != b.SubBatch || a.SubBatches != b.SubBatches || !slices.EqualFunc(a.Lines, b.Lines, bytes.Equal) {
				t.Fatalf("group %d batch %d differs under the budget", g, j)
			}
		}
	}
	capacity, used, peak := budget.state()
	t.Logf("peak %d of %d bytes; %d batches deferred", peak, capacity, len(deferred))
	if used != 0 {
		t.Errorf("%d bytes still reserved", used)
	}
	if peak > capacity {
		t.Errorf("reservations peaked at %d bytes, over the budget of %d", peak, capacity)
	}
}
