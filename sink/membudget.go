package sink

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/s3once/s3once/internal/membudget"
	"github.com/s3once/s3once/recoverable"
)

// The worker's memory budget (Config.MaxWorkerMemory), a
// membudget.Budget. One budget serves every Write in the process: the
// batches the Batch stage gathers and the encodings it hands the runner,
// the batches the writer holds, the part buffers of the files it writes,
// and their Parquet row groups. Its capacity is the smallest
// MaxWorkerMemory of the Writes whose stages have started in the process.
//
// Nobody waits for memory while holding any, which is what keeps the
// budget free of deadlock whether or not the runner fuses Batch with the
// writer:
//
//   - Batch reserves as it gathers, without waiting (TryAcquire). When the
//     budget is short it spills the group to local disk and lets go of
//     what it held; it then waits (Acquire) for each sub-batch it reads
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

// workerMemory is the process's budget.
var workerMemory = newWorkerBudget()

// newWorkerBudget makes a budget that counts its waits (memory_waits) and
// warns of a need it clamps.
func newWorkerBudget() *membudget.Budget {
	return &membudget.Budget{
		Waited: func(ctx context.Context) { metricMemoryWaits.Inc(ctx, 1) },
		Clamped: func(ctx context.Context, what string, need, left int64) {
			log.Warnf(ctx, "s3once sink: %s needs %d bytes of memory, more than the %d of the worker's budget (the smallest MaxWorkerMemory of the Writes in this process) that its idle part buffers leave: it waits until the worker holds nothing else, and the sink's memory may exceed the budget; raise MaxWorkerMemory or lower MaxBatchBytes, PartSize or Concurrency", what, need, left)
		},
	}
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
func (s writerTuning) partBuffers() int64 {
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
func (s writerSettings) encoderMemory(recordBytes int64) int64 {
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
func (s writerSettings) writerMemory(recordBytes, records int64) int64 {
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
