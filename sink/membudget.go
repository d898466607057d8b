package sink

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/s3once/s3once/recoverable"
)

// The worker's memory budget (Config.MaxWorkerMemory). One budget serves
// every Write in the process: the batches the Batch stage gathers and the
// encodings it hands the runner, the batches the writer holds, the part
// buffers of the files it writes, and their Parquet row groups. Its
// capacity is the smallest MaxWorkerMemory of the Writes whose stages
// have started in the process.
//
// Nobody waits for memory while holding any, which is what keeps the
// budget free of deadlock whether or not the runner fuses Batch with the
// writer:
//
//   - Batch reserves as it gathers, without waiting (tryAcquire). When the
//     budget is short it spills the group to local disk and lets go of
//     what it held; it then waits (acquire) for each sub-batch it reads
//     back, holding nothing, and lets go once the runner took it. A group
//     spilled for memory alone keeps its sub-batch count (one when it
//     fits MaxBatchBytes), so the files' names and bytes do not depend on
//     memory.
//   - The writer reserves a batch whole (its records, part buffers and row
//     group) before it writes a byte, without waiting. When the budget is
//     short it gives the element back to the runner as a residual (a
//     self-checkpoint before its first record) and asks to be resumed
//     later: the runner holds the batch meanwhile, not the worker. A batch
//     decoded from the runner's bytes keeps its records encoded until the
//     reservation succeeds (batch.held), so a batch given back cost
//     the sink no allocation and goes back as the bytes it came in.
//
// Waiters are served in order, and a reservation without waiting fails
// while anybody waits, so that a large wait is not starved by small
// reservations. A nil *memBudget reserves nothing and never waits.
type memBudget struct {
	mu       sync.Mutex
	capacity int64 // 0 until a stage sets it
	used     int64
	pinned   int64 // of used, held for good (hold)
	peak     int64
	queue    []*memWaiter
	clamped  bool // a need above the capacity was clamped (warned once)
}

type memWaiter struct {
	n     int64
	ready chan struct{}
}

// workerMemory is the process's budget.
var workerMemory = &memBudget{}

// limit makes c the capacity if it is the smallest seen.
func (m *memBudget) limit(c int64) {
	if c <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.capacity == 0 || c < m.capacity {
		m.capacity = c
	}
}

// fit clamps a need to the capacity: a need above what the pinned part
// buffers leave of it (another Write in the process set a smaller budget,
// or records so small that their slice headers outweigh them) takes the
// whole budget once nothing else is reserved (see fits), and is reported
// once.
func (m *memBudget) fit(ctx context.Context, n int64, what string) int64 {
	if m == nil {
		return n
	}
	m.mu.Lock()
	capacity, whole, warn := m.capacity-m.pinned, m.capacity, false
	if m.capacity > 0 && n > capacity {
		warn, m.clamped = !m.clamped, true
	}
	m.mu.Unlock()
	if whole <= 0 || n <= capacity {
		return n
	}
	if warn {
		log.Warnf(ctx, "s3once sink: %s needs %d bytes of memory, more than the %d of the worker's budget (the smallest MaxWorkerMemory of the Writes in this process) that its idle part buffers leave: it waits until the worker holds nothing else, and the sink's memory may exceed the budget; raise MaxWorkerMemory or lower MaxBatchBytes, PartSize or Concurrency", what, n, max(capacity, 0))
	}
	return whole
}

// tryAcquire reserves n bytes if they are free and nobody waits.
func (m *memBudget) tryAcquire(n int64) bool {
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

// acquire reserves n bytes (at most the capacity: see fit), waiting in line
// until they are free. The caller must hold no reservation of its own.
func (m *memBudget) acquire(ctx context.Context, n int64) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	if m.capacity <= 0 || (len(m.queue) == 0 && m.fits(n)) {
		m.take(n)
		m.mu.Unlock()
		return nil
	}
	w := &memWaiter{n: n, ready: make(chan struct{})}
	m.queue = append(m.queue, w)
	m.mu.Unlock()
	metricMemoryWaits.Inc(ctx, 1)
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

// release gives n reserved bytes back.
func (m *memBudget) release(n int64) {
	if m == nil || n == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= n
	m.grant()
}

// fits reports whether n bytes can be reserved now: they are free, or
// nothing but the pinned buffers is reserved, so that a need the capacity
// cannot hold beside them (see fit) is served once the worker is otherwise
// idle, never refused for good; m.mu is held.
func (m *memBudget) fits(n int64) bool {
	return m.used+n <= m.capacity || m.used <= m.pinned
}

// take reserves n; m.mu is held.
func (m *memBudget) take(n int64) {
	m.used += n
	m.peak = max(m.peak, m.used)
}

// grant serves the waiters in line whose need is now free; m.mu is held.
func (m *memBudget) grant() {
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

// state returns the capacity, the bytes reserved now and their peak.
func (m *memBudget) state() (capacity, used, peak int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.capacity, m.used, m.peak
}

var (
	// metricMemoryWaits counts the times Batch waited for memory to read a
	// spilled sub-batch back; metricMemorySpills the groups it spilled
	// because the budget was short (not because they exceed MaxBatchBytes);
	// metricMemoryDeferrals the batches the writer gave back to the runner
	// to be resumed once memory is free.
	metricMemoryWaits     = beam.NewCounter("s3once", "memory_waits")
	metricMemorySpills    = beam.NewCounter("s3once", "memory_spills")
	metricMemoryDeferrals = beam.NewCounter("s3once", "memory_deferrals")
)

// deferDelay is how long the writer asks the runner to wait before it hands
// a deferred batch back: a random time up to maxDeferDelay, so that the
// batches the runner holds come back spread out, not all at once.
func deferDelay() time.Duration {
	return minDeferDelay + rand.N(maxDeferDelay-minDeferDelay)
}

const (
	minDeferDelay = 50 * time.Millisecond
	maxDeferDelay = time.Second
)

// The sizes the budget counts beyond record bytes.
const (
	// sliceHeader is the memory of one record's slice header in a batch.
	sliceHeader = 24
	// codecAllowance covers a compressor's state and buffers.
	codecAllowance = 4 << 20
)

// partBuffers is the memory of one file's part buffers: PartSize x
// (Concurrency + 1), the defaults filled in.
func (s settings) partBuffers() int64 {
	part, conc := s.PartSize, int64(s.Concurrency)
	if part == 0 {
		part = recoverable.DefaultPartSize
	}
	if conc == 0 {
		conc = recoverable.DefaultConcurrency
	}
	return part * (conc + 1)
}

// encoderMemory is what a file's encoder holds beside its parts: twice a
// Parquet row group (its column buffers and their pages), at most the
// batch's record bytes; and a compressor's state.
func (s settings) encoderMemory(recordBytes int64) int64 {
	var n int64
	if s.Parquet != nil {
		n += 2*min(s.Parquet.RowGroupBytes, recordBytes) + codecAllowance
	}
	if s.Compression != "" && s.Compression != "none" {
		n += codecAllowance
	}
	return n
}

// writerMemory is what the writer reserves for a batch of records record
// bytes: the batch as the runner handed it over (its records, their
// length prefixes and slice headers), one file's part buffers and its
// encoder.
func (s settings) writerMemory(recordBytes, records int64) int64 {
	return recordBytes + records*(sliceHeader+2) + s.partBuffers() + s.encoderMemory(recordBytes)
}

// batchMemory is the least MaxWorkerMemory that holds one batch of
// MaxBatchBytes at either stage (records aside, which it cannot know), with
// the part buffers the writer keeps for its next file.
func (s settings) batchMemory() int64 {
	return max(2*s.MaxBatchBytes, s.writerMemory(s.MaxBatchBytes, 0)) + s.partBuffers()
}

// batchMemoryParts says what batchMemory adds up.
func (s settings) batchMemoryParts() string {
	return fmt.Sprintf("the larger of twice MaxBatchBytes (%d) and MaxBatchBytes with a file's part buffers and encoder (%d), plus the part buffers kept for the next file (%d)",
		2*s.MaxBatchBytes, s.writerMemory(s.MaxBatchBytes, 0), s.partBuffers())
}

// recordBytes sums the record bytes of lines.
func recordBytes(lines [][]byte) int64 {
	var n int64
	for _, l := range lines {
		n += int64(len(l))
	}
	return n
}

// hold reserves n bytes for good, whatever is free: the idle part buffers
// of a shared stream writer (worker.writer).
func (m *memBudget) hold(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.take(n)
	m.pinned += n
}
