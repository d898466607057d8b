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

	"github.com/s3once/s3once/internal/membudget"
)

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
	collect := func(budget *membudget.Budget, g int, deferred *[]batch, mu *sync.Mutex) ([]batch, error) {
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
			need := budget.Fit(context.Background(), 2*recordBytes(b.Lines), "a batch")
			if !budget.TryAcquire(need) {
				mu.Lock()
				*deferred = append(*deferred, b)
				mu.Unlock()
				return
			}
			budget.Release(need)
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

	budget := &membudget.Budget{}
	budget.Limit(3 * limit)
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
	u := budget.Usage()
	capacity, used, peak := u.Capacity, u.Used, u.Peak
	t.Logf("peak %d of %d bytes; %d batches deferred", peak, capacity, len(deferred))
	if used != 0 {
		t.Errorf("%d bytes still reserved", used)
	}
	if peak > capacity {
		t.Errorf("reservations peaked at %d bytes, over the budget of %d", peak, capacity)
	}
}
