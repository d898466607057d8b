package sink

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// budgetLinesFn emits N lines of Len bytes (a newline not counted), the
// same on every run: each starts with its number, and the rest follows
// from it.
type budgetLinesFn struct{ N, Len int }

func (f *budgetLinesFn) ProcessElement(_ []byte, emit func(string)) {
	for i := range f.N {
		emit(budgetLine(i, f.Len))
	}
}

func budgetLine(i, n int) string {
	b := fmt.Appendf(make([]byte, 0, n), "%08d ", i)
	x := uint64(i)*0x9e3779b97f4a7c15 + 1
	for len(b) < n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, 'a'+byte(x%26))
	}
	return string(b)
}

func init() {
	register.DoFn2x0[[]byte, func(string)](&budgetLinesFn{})
	register.Emitter1[string]()
}

// TestWorkerBudgetOnPrism: 16 shards ready at once on the embedded runner,
// against a MaxWorkerMemory that holds about one batch in the writer with
// its part buffers, while another Write in the process (the test, standing
// in for it) holds all of the rest but a megabyte until a stage of this
// one waits for memory. The run finishes (nothing waits for memory while
// it holds some, so nothing deadlocks), every record is in the files once,
// Batch waited for memory (memory_waits), and the reservations of batches,
// part buffers and encoders, the other Write's included, never passed the
// budget and all ended with the run. A control run under 1 GiB, with
// nothing else held, is never short, and its peak holds the idle part
// buffers and at least one shard's batch: the accounting sees the batches.
//
// The peak is the budget's own accounting, exact on every machine; how
// closely the process's heap follows it is bench's TestWorkerMemoryBudget
// (make soak), which measures the heap.
func TestWorkerBudgetOnPrism(t *testing.T) {
	const (
		records  = 8 << 10
		lineLen  = 2047 // and a newline: 16 MiB in all, 1 MiB a shard
		shards   = 16
		maxBatch = 2 << 20
		part     = 5 << 20
		idle     = 2 * part // the part buffers a writer keeps (Concurrency 1)
		tight    = 24 << 20
		// other is what the other Write holds: all the budget but the
		// idle part buffers and less than one group's gathering needs.
		other = tight - idle - 1<<20
	)
	want := make([]string, records)
	for i := range want {
		want[i] = budgetLine(i, lineLen)
	}
	bucket := srv.Bucket(t)
	c := testClient()
	run := func(name string, limit, held int64) (map[string]int64, int64) {
		// A budget of its own: the process's keeps the smallest capacity
		// that any earlier test set. A staging prefix of its own (the
		// bucket is new to each run of the test) gives the run a worker of
		// its own, whose idle part buffers the new budget holds: a worker
		// made before held them in the old one.
		saved := workerMemory
		budget := newWorkerBudget()
		// waited closes at the first wait for memory, which the budget
		// still counts.
		waited, count := make(chan struct{}), budget.Waited
		var first sync.Once
		budget.Waited = func(ctx context.Context) {
			first.Do(func() { close(waited) })
			count(ctx)
		}
		workerMemory = budget
		defer func() { workerMemory = saved }()
		budget.Limit(limit)
		cfg := testConfig(bucket, name)
		cfg.StagingPrefix = ".s3once/" + bucket + "-" + name + "/"
		cfg.Shards = shards
		cfg.MaxBatchBytes = maxBatch
		cfg.PartSize = part
		cfg.Concurrency = 1
		cfg.MaxWorkerMemory = limit
		// The worker's stream writer made first, as the writer's Setup
		// makes it, with its idle part buffers held: the run then starts
		// with the same free memory whether or not the runner fuses Batch
		// with the writer (its Setup finds the writer made).
		st, err := cfg.settings()
		if err != nil {
			t.Fatal(err)
		}
		w, err := st.worker(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.writer(st.streamOptions(), st.partBuffers()); err != nil {
			t.Fatal(err)
		}
		// Without them held, the run would gather batches without waiting
		// that its writer could never reserve beside the other Write's
		// memory, which waits for a wait.
		if used := budget.Usage().Used; used != idle {
			t.Fatalf("%s: the worker's stream writer holds %d bytes of idle part buffers in the new budget, want %d", name, used, idle)
		}
		done, released := make(chan struct{}), make(chan struct{})
		if held > 0 {
			if !budget.TryAcquire(held) {
				t.Fatalf("%s: the other Write's %d bytes do not fit an empty budget", name, held)
			}
			// The other Write lets go once a stage of this one waits for
			// memory, or once the run ended without ever waiting (which
			// the counters show below). Every way the run can take for
			// its first group waits before it emits a batch: its first
			// reservation, or the read back of the group it spilled, needs
			// more than the megabyte left.
			go func() {
				defer close(released)
				defer budget.Release(held)
				select {
				case <-waited:
				case <-done:
				}
			}()
		} else {
			close(released)
		}

		p, s := beam.NewPipelineWithRoot()
		Write(s, beam.ParDo(s, &budgetLinesFn{N: records, Len: lineLen}, beam.Impulse(s)), cfg)
		pr, err := ptest.RunWithMetrics(p)
		close(done)
		<-released
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		u := budget.Usage()
		capacity, used, peak, pinned := u.Capacity, u.Used, u.Peak, u.Pinned
		n := counters(pr)
		t.Logf("%s: reservations peaked at %.1f MiB of %d MiB (%.1f MiB of it idle part buffers, %.1f MiB the other Write's); memory_waits %d, memory_spills %d, memory_deferrals %d",
			name, float64(peak)/(1<<20), capacity>>20, float64(pinned)/(1<<20), float64(held)/(1<<20), n["memory_waits"], n["memory_spills"], n["memory_deferrals"])
		if capacity != limit {
			t.Errorf("%s: the budget's capacity is %d bytes, want MaxWorkerMemory %d", name, capacity, limit)
		}
		if pinned != idle {
			t.Errorf("%s: %d bytes of idle part buffers held, want %d", name, pinned, idle)
		}
		if peak > capacity {
			t.Errorf("%s: reservations peaked at %d bytes, over the budget of %d", name, peak, capacity)
		}
		if used != pinned {
			t.Errorf("%s: %d bytes still reserved after the run beside the %d of idle part buffers", name, used-pinned, pinned)
		}
		var got []string
		for k, v := range relative(t, c, bucket, name) {
			got = append(got, lines(t, k, v)...)
		}
		sameMultiset(t, got, want)
		return n, peak
	}

	if n, _ := run("tight", tight, other); n["memory_waits"] == 0 {
		t.Errorf("under a budget of %d MiB, %d MiB of it held elsewhere, Batch never waited for memory: it gathered a group the budget had no room for", tight>>20, other>>20)
	}
	n, peak := run("loose", 1<<30, 0)
	if short := n["memory_waits"] + n["memory_spills"] + n["memory_deferrals"]; short != 0 {
		t.Errorf("under a budget of 1 GiB the budget was short %d times: this pipeline needs far less", short)
	}
	if shard := int64(records * (lineLen + 1) / shards); peak < idle+shard {
		t.Errorf("under a budget of 1 GiB the reservations peaked at %d bytes, less than the idle part buffers and one shard's batch (%d): the budget misses what the sink holds", peak, idle+shard)
	}
	checkClean(t, c, bucket) // the runs' staging prefixes lie under .s3once/
}
