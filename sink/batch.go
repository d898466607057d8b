package sink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/internal/pack"
)

// batch is the writer's element: records of one shard of one destination,
// window and pane, sorted bytewise. Sorting makes a file's bytes a function of
// the set of records it holds, whatever order the runner handed them over in.
//
// A shard that fits in MaxBatchBytes is one batch (SubBatches 1). A larger
// shard is split into SubBatches batches by a hash of each record, so which
// batch a record lands in depends on the record alone; SubBatch is the
// batch's index among them.
type batch struct {
	Destination string
	Window      string
	Pane        int64
	Shard       int
	Shards      int
	SubBatch    int
	SubBatches  int
	Lines       [][]byte

	// encoded holds the batch's encoding once it has one (encodeBatch
	// fills it): the runner's bytes for a batch decoded from them
	// (decodeHeldBatch), whose records it also keeps encoded, Lines nil,
	// until the writer has reserved memory for them and calls
	// decodeRecords. For a batch Batch emits it holds the records
	// themselves (Lines nil) and, once the SDK has encoded the batch to
	// hand it over (and, to sample its size, up to once more per
	// PCollection it passes through in the stage), that encoding; see
	// emitted. Nil otherwise (a batch made by hand). Shared by the copies
	// of one batch, which never change its records.
	encoded *encodedRecords
}

// encodedRecords is a batch's encoding (current version, checked), made
// once. For a batch decoded from the runner's bytes it is those bytes, and
// records, count and bytes describe the records in it: a batch the writer
// gives back to the runner before decoding them (the budget was short) goes
// back as the bytes it came in, and the sink allocates nothing for a batch
// it has not reserved memory for.
type encodedRecords struct {
	mu      sync.Mutex
	frame   []byte             // the batch's encoding, as encodeBatch makes it
	decoded bool               // frame is the runner's bytes (decodeHeldBatch)
	records []byte             // the length-prefixed records, aliasing frame (decoded batches)
	packed  *compressedRecords // instead of records, for version 4
	count   int64
	bytes   int64    // record bytes (decoded batches)
	lines   [][]byte // an emitted batch's records, until handedOver
	spent   bool     // handedOver: lines and frame are gone
}

// emitted returns b as Batch hands it to the runner: its records move into
// a new memo that the copies the SDK makes of the element share, so that
// handedOver can let go of them for every copy at once.
func (b batch) emitted() batch {
	b.encoded = &encodedRecords{lines: b.Lines}
	b.Lines = nil
	return b
}

// handedOver lets go of an emitted batch's records and encoding, once the
// element has passed through the stage (the runner holds its bytes). The
// SDK keeps copies of the last element a DoFn saw in its invokers until the
// bundle ends, so without this a bundle of many groups would hold a batch
// after its reservation ended, and a worker running many such bundles many
// batches, outside the budget. Encoding a spent batch is an error, never an
// empty batch.
func (e *encodedRecords) handedOver() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines, e.frame, e.spent = nil, nil, true
}

// errBatchSpent is returned for a batch used after Batch handed it over.
var errBatchSpent = errors.New("s3once sink: a batch was used after the runner took it (an SDK change?); its records are gone, so the bundle fails and is retried")

// size returns the batch's record count and record bytes, decoded or not.
func (b *batch) size() (count, recBytes int64) {
	lines := b.Lines
	if e := b.encoded; e != nil && lines == nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.decoded {
			return e.count, e.bytes
		}
		lines = e.lines
	}
	return int64(len(lines)), recordBytes(lines)
}

// decodeRecords makes Lines from the encoded records (aliasing them, or,
// for version 4, a buffer it decompresses them into), once the caller has
// reserved memory for them; a batch with Lines already has nothing to do.
func (b *batch) decodeRecords() error {
	e := b.encoded
	if e == nil || b.Lines != nil {
		return nil
	}
	if !e.decoded {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.spent {
			return errBatchSpent
		}
		b.Lines = e.lines
		return nil
	}
	records := e.records
	if e.packed != nil {
		var err error
		if records, err = e.packed.decompress(); err != nil {
			return fmt.Errorf("%w: %w", errBatchEncoding, err)
		}
	}
	r := frame.NewReader("batch", records)
	lines := make([][]byte, 0, e.count)
	var size int64
	for range e.count {
		l := r.Bytes("record", 0, r.Remaining())
		lines = append(lines, l)
		size += int64(len(l))
	}
	if err := r.Finish(); err != nil {
		return fmt.Errorf("%w: %w", errBatchEncoding, err)
	}
	if size != e.bytes {
		return fmt.Errorf("%w: %d bytes of records, %d were announced", errBatchEncoding, size, e.bytes)
	}
	b.Lines = lines
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
	e := b.encoded
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.decoded {
		e.frame = nil
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
// record goes to one of maxSubBatches bucket files under a temporary
// directory, chosen by subBatchHash; the buckets are then read back in
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
func gather(ctx context.Context, budget *memBudget, head batch, limit int64, values func(*[]byte) bool, failed func() error, emit func(batch)) (err error) {
	var (
		lines [][]byte
		chunk []byte
		total int64
		line  []byte
		sp    *spill
		held  int64 // reserved in budget
	)
	defer func() {
		budget.release(held)
		if sp != nil {
			if cerr := sp.remove(); err == nil && cerr != nil {
				err = head.fail("remove spill files", cerr)
			}
		}
	}()
	// toDisk moves the records gathered so far to a new spill, and keeps of
	// the reservation only what the spill's buffers take.
	toDisk := func() error {
		bufSize := min(max(held/maxSubBatches, minSpillBuffer), spillBufferSize)
		keep := min(held, maxSubBatches*bufSize)
		if keep == 0 {
			// Nothing is held (nothing was gathered): wait for the
			// buffers, holding nothing.
			keep = maxSubBatches * bufSize
			if err := budget.acquire(ctx, keep); err != nil {
				return err
			}
			held = keep
		}
		var err error
		if sp, err = newSpill(int(bufSize)); err != nil {
			return err
		}
		for _, l := range lines {
			if err := sp.add(l); err != nil {
				return err
			}
		}
		lines, chunk = nil, nil
		budget.release(held - keep)
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
				need = budget.fit(ctx, need, "a batch")
			}
			if need > 0 && !budget.tryAcquire(need) {
				if held > 0 {
					metricMemorySpills.Inc(ctx, 1)
					if err := toDisk(); err != nil {
						return head.fail("spill to local disk", err)
					}
				} else {
					// The group's first reservation: wait for it, holding
					// nothing.
					if err := budget.acquire(ctx, need); err != nil {
						return head.fail("wait for memory", err)
					}
					held += need
				}
			} else {
				held += need
			}
		}
		if sp != nil {
			if err := sp.add(line); err != nil {
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
	if err := sp.finish(); err != nil {
		return head.fail("spill to local disk", err)
	}
	budget.release(held) // the spill's write buffers
	held = 0
	n := 1
	if total > limit {
		n = subBatchCount(total, limit)
	}
	per := maxSubBatches / n
	// Check every sub-batch before emitting any.
	for j := 0; j < n; j++ {
		size := sp.size(j*per, (j+1)*per)
		if size > limit && total > maxSubBatches*limit/2 {
			return fmt.Errorf("s3once sink: destination %q, window %s, pane %d, shard %d of %d holds %d bytes of records, too many for %d sub-batches of at most MaxBatchBytes (%d bytes; sub-batch %d holds %d): raise Shards so each shard holds less, or raise MaxBatchBytes",
				head.Destination, head.Window, head.Pane, head.Shard, head.Shards, total, maxSubBatches, limit, j, size)
		}
		if size > limit {
			return fmt.Errorf("s3once sink: destination %q, window %s, pane %d, shard %d of %d holds %d bytes of records, and splitting it by record hash into %d sub-batches still leaves %d bytes in sub-batch %d, more than MaxBatchBytes (%d): the records are too skewed to split (many identical records, say); raise MaxBatchBytes",
				head.Destination, head.Window, head.Pane, head.Shard, head.Shards, total, n, size, j, limit)
		}
	}
	for j := 0; j < n; j++ {
		if sp.count(j*per, (j+1)*per) == 0 {
			continue // no file is ever empty
		}
		// The sub-batch's records, their headers, its encoding and the
		// read buffer; waited for holding nothing.
		need := budget.fit(ctx, 2*sp.size(j*per, (j+1)*per)+2*sliceHeader*sp.count(j*per, (j+1)*per)+spillBufferSize, "a sub-batch")
		if err := budget.acquire(ctx, need); err != nil {
			return head.fail("wait for memory", err)
		}
		held = need
		lines, err := sp.read(j*per, (j+1)*per)
		if err != nil {
			return head.fail("read spill files back", err)
		}
		slices.SortFunc(lines, bytes.Compare)
		b := head
		b.SubBatch, b.SubBatches, b.Lines = j, n, lines
		emit(b)
		budget.release(held)
		held = 0
	}
	return nil
}

func (b *batch) fail(what string, err error) error {
	return fmt.Errorf("s3once sink: destination %q, window %s, pane %d, shard %d of %d: %s: %w", b.Destination, b.Window, b.Pane, b.Shard, b.Shards, what, err)
}

// subBatchCount is the number of sub-batches a spilled group of total bytes is
// split into: the least power of two that makes them half of limit on
// average, at most maxSubBatches.
func subBatchCount(total, limit int64) int {
	half := max(limit/2, 1)
	need := (total + half - 1) / half
	n := 1
	for int64(n) < need && n < maxSubBatches {
		n <<= 1
	}
	return n
}

// subBatchSalt sets subBatchHash apart from output version 1's shard hash (a
// plain FNV-64a of the record): records of one shard share that hash modulo
// Shards, not this one. Version 2's shard hash is another function
// (sharder).
var subBatchSalt = [8]byte{'s', '3', 'o', 'n', 'c', 'e', 's', 'b'}

// subBatchHash picks a record's spill bucket, 0 to maxSubBatches-1: the top
// six bits of a salted FNV-64a of the record, mixed by the MurmurHash3
// finaliser. It is the same in every process and every version that keeps
// the sub-batch layout.
func subBatchHash(rec []byte) int {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for _, c := range subBatchSalt {
		h ^= uint64(c)
		h *= prime
	}
	for _, c := range rec {
		h ^= uint64(c)
		h *= prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return int(h >> 58)
}

// The batch encoding, version 3: one frame of internal/frame
// (frame.Framing, magic "S3WB", a bound of maxBatchPayload) around the
// payload: the destination, the window (length-prefixed strings), the pane,
// the shard, the shard count, the sub-batch, the sub-batch count and the
// number of records (minimal uvarints), then the records, each
// length-prefixed (uvarint). The payload is written in place into the frame
// and the decoded records alias the input. Version 4 is the same with the
// records compressed (batchchunks.go); encodeBatch writes it for all but
// the smallest batches, and decoding it copies the records once, into the
// buffer they are decompressed into.
//
// Versions 1 and 2 (written before version 3) had their own frame: magic,
// version, payload, CRC-32C of everything before it, with no length field.
// Their payloads are version 3's, without the sub-batch fields in version 1
// (sub-batch 0 of 1). They still decode (decodeLegacyBatch), so that batches
// in checkpoints taken by an earlier build are read by this one.
// testdata/batch_v1.bin and batch_v2*.bin are examples of them,
// batch_v3*.bin of version 3, batch_v4*.bin of version 4.
var batchFraming = frame.Framing{Magic: [4]byte{'S', '3', 'W', 'B'}, MaxPayload: maxBatchPayload}

const (
	batchVersion = batchCompressed // the newest version this build reads
	// maxBatchPayload bounds a batch's payload: MaxMaxBatchBytes of records
	// with their length prefixes and the header fields fit under it (for
	// records of 4 bytes or more, terminator included), and so does the
	// frame's four-byte length field.
	maxBatchPayload = frame.MaxLength
)

// errBatchEncoding is wrapped by every batch decoding error.
var errBatchEncoding = errors.New("s3once sink: malformed batch encoding")

func encodeBatch(b batch) ([]byte, error) {
	e := b.encoded
	if e == nil {
		return encodeBatchRecords(b)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.frame == nil {
		if e.spent {
			return nil, errBatchSpent
		}
		if b.Lines == nil {
			b.Lines = e.lines
		}
		out, err := encodeBatchRecords(b)
		if err != nil {
			return nil, err
		}
		e.frame = out
	}
	return e.frame, nil
}

// encodeBatchRecords encodes b from its fields and Lines: as version 4, or
// version 3 for a batch too small to gain from compression.
func encodeBatchRecords(b batch) ([]byte, error) { return encodeBatchVersion(b, 0) }

// encodeBatchVersion encodes b as version 3 or 4, or, given 0, as the
// records' size calls for (see encodeBatchRecords).
func encodeBatchVersion(b batch, version byte) ([]byte, error) {
	if b.Shards < 1 || b.Shards > MaxShards || b.Shard < 0 || b.Shard >= b.Shards || b.Pane < 0 ||
		b.SubBatches < 1 || b.SubBatches > maxSubBatches || b.SubBatch < 0 || b.SubBatch >= b.SubBatches {
		return nil, fmt.Errorf("s3once sink: cannot encode batch: shard %d of %d, sub-batch %d of %d, pane %d", b.Shard, b.Shards, b.SubBatch, b.SubBatches, b.Pane)
	}
	section := recordsSectionLen(b.Lines)
	if version == 0 {
		version = batchPlain
		if section >= batchCompressMin {
			version = batchCompressed
		}
	}
	size := 8*binary.MaxVarintLen64 + len(b.Destination) + len(b.Window) + section
	if version == batchCompressed {
		// At worst every chunk is stored, with its kind and length.
		size += (section/batchChunkBytes + 1) * (1 + binary.MaxVarintLen32)
	}
	out, err := batchFraming.Begin(version, size)
	if err != nil {
		return nil, fmt.Errorf("s3once sink: cannot encode batch: %w", err)
	}
	out = appendString(out, b.Destination)
	out = appendString(out, b.Window)
	out = binary.AppendUvarint(out, uint64(b.Pane))
	out = binary.AppendUvarint(out, uint64(b.Shard))
	out = binary.AppendUvarint(out, uint64(b.Shards))
	out = binary.AppendUvarint(out, uint64(b.SubBatch))
	out = binary.AppendUvarint(out, uint64(b.SubBatches))
	out = binary.AppendUvarint(out, uint64(len(b.Lines)))
	if version == batchCompressed {
		out = appendCompressedRecords(out, b.Lines, section)
	} else {
		for _, l := range b.Lines {
			out = binary.AppendUvarint(out, uint64(len(l)))
			out = append(out, l...)
		}
	}
	if out, err = batchFraming.End(out); err != nil {
		return nil, fmt.Errorf("s3once sink: cannot encode batch of %d records: %w", len(b.Lines), err)
	}
	if cap(out) > 2*len(out) {
		// Compressed well: keep no room for the records uncompressed.
		out = bytes.Clone(out)
	}
	return out, nil
}

// decodeBatch decodes what encodeBatch wrote, or what a build before
// version 3 wrote. The records alias data.
func decodeBatch(data []byte) (batch, error) {
	return decodeBatchAs(data, false)
}

// decodeHeldBatch is the batch coder's decoder: decodeBatch that checks
// the records but, for the current version, leaves them encoded (see
// encodedRecords). The runner's bytes reach the writer before it can
// reserve memory for them; this way the sink allocates a batch's slice
// headers only once it has, and a batch it gives back costs no new
// encoding.
func decodeHeldBatch(data []byte) (batch, error) {
	return decodeBatchAs(data, true)
}

func decodeBatchAs(data []byte, hold bool) (batch, error) {
	var (
		version byte
		payload []byte
		err     error
	)
	if len(data) > 4 && [4]byte(data[:4]) == batchFraming.Magic && (data[4] == 1 || data[4] == 2) {
		version, payload, err = decodeLegacyBatch(data)
	} else {
		version, payload, err = batchFraming.Unframe(batchVersion, data)
	}
	if err != nil {
		return batch{}, fmt.Errorf("%w: %w", errBatchEncoding, err)
	}
	b, err := decodeBatchPayload(version, payload, hold && version >= batchPlain)
	if err != nil {
		return batch{}, fmt.Errorf("%w: %w", errBatchEncoding, err)
	}
	if b.encoded != nil {
		b.encoded.frame = data
	}
	return b, nil
}

// decodeLegacyBatch checks the frame of versions 1 and 2 and returns the
// version and the payload (aliasing data).
func decodeLegacyBatch(data []byte) (byte, []byte, error) {
	if len(data) < 5+4 {
		return 0, nil, fmt.Errorf("%d bytes is too short", len(data))
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)); got != sum {
		return 0, nil, fmt.Errorf("CRC-32C %08x, stored %08x", got, sum)
	}
	return data[4], body[5:], nil
}

// decodeBatchPayload reads a payload of the given version (1 to 3). It
// checks the records; with hold it leaves them encoded (b.encoded, its
// frame for the caller to set), without it splits them (decodeRecords).
func decodeBatchPayload(version byte, payload []byte, hold bool) (batch, error) {
	r := frame.NewReader("batch", payload)
	var b batch
	b.Destination = r.String("destination", 0, MaxDestinationLen)
	b.Window = r.String("window", 0, 256)
	pane := r.Uvarint("pane", math.MaxInt64)
	shard := r.Uvarint("shard", MaxShards-1)
	shards := r.Uvarint("shard count", MaxShards)
	sub, subs := uint64(0), uint64(1)
	if version >= 2 {
		sub = r.Uvarint("sub-batch", maxSubBatches-1)
		subs = r.Uvarint("sub-batch count", maxSubBatches)
	}
	var count, recBytes uint64
	var packed *compressedRecords
	if version == batchCompressed {
		count = r.Uvarint("record count", maxBatchPayload)
		recBytes = r.Uvarint("record bytes", maxBatchPayload)
	} else {
		count = r.Uvarint("record count", uint64(r.Remaining()))
	}
	if err := r.Err(); err != nil {
		return batch{}, err
	}
	b.Pane, b.Shard, b.Shards = int64(pane), int(shard), int(shards)
	b.SubBatch, b.SubBatches = int(sub), int(subs)
	if b.Shards < 1 || b.Shard >= b.Shards {
		return batch{}, fmt.Errorf("shard %d of %d", b.Shard, b.Shards)
	}
	if b.SubBatches < 1 || b.SubBatch >= b.SubBatches {
		return batch{}, fmt.Errorf("sub-batch %d of %d", b.SubBatch, b.SubBatches)
	}
	if err := checkPath("destination", b.Destination, MaxDestinationLen); err != nil {
		return batch{}, err
	}
	if b.Window == "" {
		return batch{}, errors.New("empty window name")
	}
	records := payload[len(payload)-r.Remaining():]
	if version == batchCompressed {
		// The records are checked when they are decompressed
		// (decodeRecords); here, the chunks' framing and the sizes.
		section, err := readChunks(records)
		if err != nil {
			return batch{}, err
		}
		if count > uint64(section) || recBytes > uint64(section)-count {
			return batch{}, fmt.Errorf("%d records of %d bytes in a records section of %d bytes", count, recBytes, section)
		}
		packed, records = &compressedRecords{chunks: records, section: section}, nil
	} else {
		for range count {
			recBytes += uint64(len(r.Bytes("record", 0, r.Remaining())))
		}
		if err := r.Finish(); err != nil {
			return batch{}, err
		}
	}
	b.encoded = &encodedRecords{decoded: true, records: records, packed: packed, count: int64(count), bytes: int64(recBytes)}
	if !hold {
		if err := b.decodeRecords(); err != nil {
			return batch{}, err
		}
		b.encoded = nil
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// Setup removes the spill directories that killed workers left in
// os.TempDir (TMPDIR); see removeStaleSpills. Failing to remove one is
// logged, never fatal: it costs disk, not correctness.
func (f *batchFn) Setup(ctx context.Context) error {
	workerMemory.limit(f.MaxWorkerMemory)
	removed, err := removeStaleSpills(os.TempDir(), time.Now())
	for _, d := range removed {
		log.Infof(ctx, "s3once sink: removed %s, the spill directory of a worker that died while it spilled", d)
	}
	if err != nil {
		log.Warnf(ctx, "s3once sink: stale spill directories not removed: %v", err)
	}
	return nil
}
