package sink

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/s3once/s3once/internal/batchwire"
	"github.com/s3once/s3once/internal/membudget"
	"github.com/s3once/s3once/internal/pack"
	"github.com/s3once/s3once/internal/spill"
)

// batch is the writer's element: records of one shard of one destination,
// window and pane, sorted bytewise. Sorting makes a file's bytes a function of
// the set of records it holds, whatever order the runner handed them over in.
//
// A shard that fits in MaxBatchBytes is one batch (SubBatches 1). A larger
// shard is split into SubBatches batches by a hash of each record, so which
// batch a record lands in depends on the record alone; SubBatch is the
// batch's index among them.
//
// Its encoding is package internal/batchwire's (the batch coder:
// encodeBatch, decodeHeldBatch). A batch holds its records in Lines, or,
// until the writer has reserved memory for them (decodeRecords), in one of
// two other places:
//
//   - held: a batch decoded from the runner's bytes keeps its records
//     encoded in them, checked (batchwire.Records), and encodes as those
//     same bytes, so that a batch the writer gives back (the budget was
//     short) costs the sink no allocation and goes back as it came;
//   - memo: a batch Batch emits shares its records, and its encoding once
//     the SDK has made one, with the copies the SDK makes of the element
//     (batchEmitter).
type batch struct {
	Destination string
	Window      string
	Pane        int64
	Shard       int
	Shards      int
	SubBatch    int
	SubBatches  int
	Lines       [][]byte

	held *batchwire.Records
	memo *batchMemo
}

// batchCodec is the batch encoding within the sink's bounds.
var batchCodec = batchwire.Codec{
	MaxShards: MaxShards, MaxSubBatches: spill.Buckets, MaxDestination: MaxDestinationLen,
	CheckDestination: func(d string) error { return checkPath("destination", d, MaxDestinationLen) },
}

func (b *batch) header() batchwire.Header {
	return batchwire.Header{Destination: b.Destination, Window: b.Window, Pane: b.Pane, Shard: b.Shard, Shards: b.Shards, SubBatch: b.SubBatch, SubBatches: b.SubBatches}
}

// batchOf is the batch of a decoded header, without records.
func batchOf(h batchwire.Header) batch {
	return batch{Destination: h.Destination, Window: h.Window, Pane: h.Pane, Shard: h.Shard, Shards: h.Shards, SubBatch: h.SubBatch, SubBatches: h.SubBatches}
}

// encodeBatch is the batch coder's encoder. A batch made by hand, or
// after it let go of its encoding, is encoded anew.
func encodeBatch(b batch) ([]byte, error) {
	switch {
	case b.held != nil:
		return b.held.Frame(), nil
	case b.memo != nil:
		return b.memo.encode(b)
	}
	out, err := batchCodec.Encode(b.header(), b.Lines)
	if err != nil {
		return nil, fmt.Errorf("s3once sink: %w", err)
	}
	return out, nil
}

// decodeBatch decodes a batch whole: its records alias data (but for
// those of a compressed batch, in a buffer of their own).
func decodeBatch(data []byte) (batch, error) {
	b, err := decodeHeldBatch(data)
	if err == nil {
		err = b.decodeRecords()
	}
	if err != nil {
		return batch{}, err
	}
	b.held = nil
	return b, nil
}

// decodeHeldBatch is the batch coder's decoder: it checks the batch and
// leaves its records held (see batch), so that the sink allocates a
// batch's slice headers only once the writer has reserved memory for
// them. A batch of a build before batch version 3 is split at once.
func decodeHeldBatch(data []byte) (batch, error) {
	h, recs, err := batchCodec.Decode(data)
	if err != nil {
		return batch{}, fmt.Errorf("s3once sink: %w", err)
	}
	b := batchOf(h)
	if recs.Frame() == nil {
		b.Lines, _ = recs.Lines()
		return b, nil
	}
	b.held = recs
	return b, nil
}

// size returns the batch's record count and record bytes, decoded or not.
func (b *batch) size() (count, recBytes int64) {
	lines := b.Lines
	switch {
	case lines != nil:
	case b.held != nil:
		return b.held.Count(), b.held.Bytes()
	case b.memo != nil:
		b.memo.mu.Lock()
		defer b.memo.mu.Unlock()
		lines = b.memo.lines
	}
	return int64(len(lines)), recordBytes(lines)
}

// decodeRecords makes Lines from the held records (aliasing them, or, for
// a compressed batch, a buffer it decompresses them into) or the memo's,
// once the caller has reserved memory for them; a batch with Lines already
// has nothing to do.
func (b *batch) decodeRecords() error {
	switch {
	case b.Lines != nil:
	case b.held != nil:
		lines, err := b.held.Lines()
		if err != nil {
			return fmt.Errorf("s3once sink: %w", err)
		}
		b.Lines = lines
	case b.memo != nil:
		b.memo.mu.Lock()
		defer b.memo.mu.Unlock()
		if b.memo.spent {
			return errBatchSpent
		}
		b.Lines = b.memo.lines
	}
	return nil
}

// dropOwnEncoding lets go of an emitted batch's memoized encoding, which
// its copies share: the writer calls it once it holds the batch's records.
// Where a runner fuses Batch with the writer, the SDK's size sampling fills
// the memo on the way, and the memo would otherwise keep a second copy of
// the batch, outside the worker budget, for as long as the writer writes.
// A batch decoded from the runner's bytes keeps them: its records alias
// them, so they cost nothing more. A later encoding (a residual) makes the
// bytes anew from the records.
func (b *batch) dropOwnEncoding() {
	if m := b.memo; m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.frame = nil
	}
}

// batchFn turns a group into batches. It holds at most MaxBatchBytes of
// records in memory; a larger group goes to local temporary files and comes
// back one sub-batch at a time. It carries the settings it reads: the shard
// count, or, under automatic sharding (Auto), none, since each key carries
// its own (countedShardKey).
type batchFn struct {
	Shards          int   `json:"shards"`
	Auto            bool  `json:"auto,omitempty"`
	MaxBatchBytes   int64 `json:"maxBatchBytes"`
	MaxWorkerMemory int64 `json:"maxWorkerMemory,omitempty"`
}

// newBatchFn makes the Batch stage's DoFn from the settings.
func newBatchFn(s settings) *batchFn {
	return &batchFn{Shards: s.Shards, Auto: s.TargetFileBytes > 0, MaxBatchBytes: s.MaxBatchBytes, MaxWorkerMemory: s.MaxWorkerMemory}
}

// arenaChunk is the size of the blocks records are copied into, so that a
// batch costs little more memory than its bytes.
const arenaChunk = 1 << 20

func (f *batchFn) ProcessElement(ctx context.Context, pane beam.PaneInfo, w beam.Window, key []byte, packs func(*[]byte) bool, emit func(batch)) error {
	shard, shards, dest, err := f.parseKey(key)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	win, err := windowName(w)
	if err != nil {
		return fmt.Errorf("s3once sink: destination %q, shard %d: %w", dest, shard, err)
	}
	head := batch{Destination: dest, Window: win, Pane: pane.Index, Shard: shard, Shards: shards, SubBatches: 1}
	u := pack.NewReader(packs)
	return gather(ctx, workerMemory, head, f.MaxBatchBytes, u.Next, u.Err, emit)
}

// parseKey reads a group's key: its shard, the shard count and the
// destination.
func (f *batchFn) parseKey(key []byte) (shard, shards int, dest string, err error) {
	if f.Auto {
		return parseCountedShardKey(key)
	}
	shard, dest, err = parseShardKey(key)
	return shard, f.Shards, dest, err
}

// gatherBatches is gather without a memory budget.
func gatherBatches(head batch, limit int64, values func(*[]byte) bool, failed func() error, emit func(batch)) error {
	return gather(context.Background(), nil, head, limit, values, failed, emit)
}

// gather reads a group's records once, from values; failed, if not nil,
// says whether values ended early on an error, which is returned before
// anything is emitted. While the records fit in limit bytes and in budget
// they stay in memory and make one batch, like head. Past that, every
// record goes to one of spill.Buckets bucket files under a temporary
// directory, chosen by spill.Hash; the buckets are then read back in
// contiguous runs, each run one sub-batch of at most limit bytes, sorted
// and emitted in turn. Which sub-batch a record lands in, and how many
// there are, depend only on the multiset of records: a group spilled for
// memory alone (it fits limit) is read back as one batch.
//
// In memory, a group reserves twice its record bytes (the records, and
// their encoding when the runner takes the batch) and its slice headers,
// as it grows, without waiting; when the budget is short it spills and
// lets go of its reservation. Reading a sub-batch back waits for its
// reservation, holding none. A nil budget reserves nothing.
func gather(ctx context.Context, budget *membudget.Budget, head batch, limit int64, values func(*[]byte) bool, failed func() error, emit func(batch)) (err error) {
	var (
		lines [][]byte
		chunk []byte
		total int64
		line  []byte
		sp    *spill.Spill
		held  int64 // reserved in budget
	)
	defer func() {
		budget.Release(held)
		if sp != nil {
			if cerr := sp.Remove(); err == nil && cerr != nil {
				err = head.fail("remove spill files", cerr)
			}
		}
	}()
	// toDisk moves the records gathered so far to a new spill, and keeps of
	// the reservation only what the spill's buffers take.
	toDisk := func() error {
		bufSize := min(max(held/spill.Buckets, spill.MinBuffer), spill.BufferSize)
		keep := min(held, spill.Buckets*bufSize)
		if keep == 0 {
			// Nothing is held (nothing was gathered): wait for the
			// buffers, holding nothing.
			keep = spill.Buckets * bufSize
			if err := budget.Acquire(ctx, keep); err != nil {
				return err
			}
			held = keep
		}
		var err error
		if sp, err = spill.New(int(bufSize)); err != nil {
			return err
		}
		for _, l := range lines {
			if err := sp.Add(l); err != nil {
				return err
			}
		}
		lines, chunk = nil, nil
		budget.Release(held - keep)
		held = keep
		return nil
	}
	for values(&line) {
		total += int64(len(line))
		if sp == nil && total > limit {
			if err := toDisk(); err != nil {
				return head.fail("spill to local disk", err)
			}
		}
		if sp == nil {
			// What this record adds to the group's memory: a new block (or
			// its own, for a large record) and room for more slice headers,
			// each twice (the batch's encoding copies it).
			var need int64
			large := len(line) > arenaChunk/4
			switch {
			case large:
				need = 2 * int64(len(line))
			case cap(chunk)-len(chunk) < len(line):
				need = 2 * arenaChunk
			}
			grow := 0
			if len(lines) == cap(lines) {
				grow = max(2*cap(lines), 1024) - cap(lines)
				need += int64(grow) * 2 * sliceHeader
			}
			if need > 0 {
				need = budget.Fit(ctx, need, "a batch")
			}
			if need > 0 && !budget.TryAcquire(need) {
				if held > 0 {
					metricMemorySpills.Inc(ctx, 1)
					if err := toDisk(); err != nil {
						return head.fail("spill to local disk", err)
					}
				} else {
					// The group's first reservation: wait for it, holding
					// nothing.
					if err := budget.Acquire(ctx, need); err != nil {
						return head.fail("wait for memory", err)
					}
					held += need
				}
			} else {
				held += need
			}
		}
		if sp != nil {
			if err := sp.Add(line); err != nil {
				return head.fail("spill to local disk", err)
			}
			continue
		}
		if len(lines) == cap(lines) {
			lines = slices.Grow(lines, max(2*cap(lines), 1024)-len(lines))
		}
		if len(line) > arenaChunk/4 {
			lines = append(lines, append([]byte(nil), line...))
			continue
		}
		if cap(chunk)-len(chunk) < len(line) {
			chunk = make([]byte, 0, arenaChunk)
		}
		start := len(chunk)
		chunk = append(chunk, line...)
		lines = append(lines, chunk[start:len(chunk):len(chunk)])
	}
	if failed != nil {
		if err := failed(); err != nil {
			return head.fail("read the group", err)
		}
	}
	if sp == nil {
		slices.SortFunc(lines, bytes.Compare)
		head.Lines = lines
		emit(head)
		return nil
	}
	if err := sp.Finish(); err != nil {
		return head.fail("spill to local disk", err)
	}
	budget.Release(held) // the spill's write buffers
	held = 0
	n := 1
	if total > limit {
		n = spill.SubBatches(total, limit)
	}
	per := spill.Buckets / n
	// Check every sub-batch before emitting any.
	for j := 0; j < n; j++ {
		size := sp.Size(j*per, (j+1)*per)
		if size > limit && total > spill.Buckets*limit/2 {
			return fmt.Errorf("s3once sink: destination %q, window %s, pane %d, shard %d of %d holds %d bytes of records, too many for %d sub-batches of at most MaxBatchBytes (%d bytes; sub-batch %d holds %d): raise Shards so each shard holds less, or raise MaxBatchBytes",
				head.Destination, head.Window, head.Pane, head.Shard, head.Shards, total, spill.Buckets, limit, j, size)
		}
		if size > limit {
			return fmt.Errorf("s3once sink: destination %q, window %s, pane %d, shard %d of %d holds %d bytes of records, and splitting it by record hash into %d sub-batches still leaves %d bytes in sub-batch %d, more than MaxBatchBytes (%d): the records are too skewed to split (many identical records, say); raise MaxBatchBytes",
				head.Destination, head.Window, head.Pane, head.Shard, head.Shards, total, n, size, j, limit)
		}
	}
	for j := 0; j < n; j++ {
		if sp.Count(j*per, (j+1)*per) == 0 {
			continue // no file is ever empty
		}
		// The sub-batch's records, their headers, its encoding and the
		// read buffer; waited for holding nothing.
		need := budget.Fit(ctx, 2*sp.Size(j*per, (j+1)*per)+2*sliceHeader*sp.Count(j*per, (j+1)*per)+spill.BufferSize, "a sub-batch")
		if err := budget.Acquire(ctx, need); err != nil {
			return head.fail("wait for memory", err)
		}
		held = need
		lines, err := sp.Read(j*per, (j+1)*per)
		if err != nil {
			return head.fail("read spill files back", err)
		}
		slices.SortFunc(lines, bytes.Compare)
		b := head
		b.SubBatch, b.SubBatches, b.Lines = j, n, lines
		emit(b)
		budget.Release(held)
		held = 0
	}
	return nil
}

func (b *batch) fail(what string, err error) error {
	return fmt.Errorf("s3once sink: destination %q, window %s, pane %d, shard %d of %d: %s: %w", b.Destination, b.Window, b.Pane, b.Shard, b.Shards, what, err)
}

// Setup removes the spill directories that killed workers left in
// os.TempDir (TMPDIR); see spill.RemoveStale. Failing to remove one is
// logged, never fatal: it costs disk, not correctness.
func (f *batchFn) Setup(ctx context.Context) error {
	workerMemory.Limit(f.MaxWorkerMemory)
	removed, err := spill.RemoveStale(os.TempDir(), time.Now())
	for _, d := range removed {
		log.Infof(ctx, "s3once sink: removed %s, the spill directory of a worker that died while it spilled", d)
	}
	if err != nil {
		log.Warnf(ctx, "s3once sink: stale spill directories not removed: %v", err)
	}
	return nil
}
