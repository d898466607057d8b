package sink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
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
}

// batchFn turns a group into batches. It holds at most MaxBatchBytes of
// records in memory; a larger group goes to local temporary files and comes
// back one sub-batch at a time. It carries the two settings it reads.
type batchFn struct {
	Shards        int   `json:"shards"`
	MaxBatchBytes int64 `json:"maxBatchBytes"`
}

// newBatchFn makes the Batch stage's DoFn from the settings.
func newBatchFn(s settings) *batchFn {
	return &batchFn{Shards: s.Shards, MaxBatchBytes: s.MaxBatchBytes}
}

// arenaChunk is the size of the blocks records are copied into, so that a
// batch costs little more memory than its bytes.
const arenaChunk = 1 << 20

func (f *batchFn) ProcessElement(ctx context.Context, pane beam.PaneInfo, w beam.Window, key []byte, values func(*[]byte) bool, emit func(batch)) error {
	shard, dest, err := parseShardKey(key)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	win, err := windowName(w)
	if err != nil {
		return fmt.Errorf("s3once sink: destination %q, shard %d: %w", dest, shard, err)
	}
	head := batch{Destination: dest, Window: win, Pane: pane.Index, Shard: shard, Shards: f.Shards, SubBatches: 1}
	return gatherBatches(head, f.MaxBatchBytes, values, emit)
}

// gatherBatches reads a group once. While its records fit in limit bytes they
// stay in memory and make one batch, like head. Past that, every record goes
// to one of maxSubBatches bucket files under a temporary directory, chosen by
// subBatchHash; the buckets are then read back in contiguous runs, each run
// one sub-batch of at most limit bytes, sorted and emitted in turn. Which
// sub-batch a record lands in, and how many there are, depend only on the
// multiset of records.
func gatherBatches(head batch, limit int64, values func(*[]byte) bool, emit func(batch)) (err error) {
	var (
		lines [][]byte
		chunk []byte
		total int64
		line  []byte
		sp    *spill
	)
	defer func() {
		if sp != nil {
			if cerr := sp.remove(); err == nil && cerr != nil {
				err = head.fail("remove spill files", cerr)
			}
		}
	}()
	for values(&line) {
		total += int64(len(line))
		if sp == nil && total > limit {
			if sp, err = newSpill(); err != nil {
				return head.fail("spill to local disk", err)
			}
			for _, l := range lines {
				if err := sp.add(l); err != nil {
					return head.fail("spill to local disk", err)
				}
			}
			lines, chunk = nil, nil
		}
		if sp != nil {
			if err := sp.add(line); err != nil {
				return head.fail("spill to local disk", err)
			}
			continue
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
	if sp == nil {
		slices.SortFunc(lines, bytes.Compare)
		head.Lines = lines
		emit(head)
		return nil
	}
	if err := sp.finish(); err != nil {
		return head.fail("spill to local disk", err)
	}
	n := subBatchCount(total, limit)
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
		lines, err := sp.read(j*per, (j+1)*per)
		if err != nil {
			return head.fail("read spill files back", err)
		}
		if len(lines) == 0 {
			continue // no file is ever empty
		}
		slices.SortFunc(lines, bytes.Compare)
		b := head
		b.SubBatch, b.SubBatches, b.Lines = j, n, lines
		emit(b)
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

// subBatchSalt sets subBatchHash apart from the shard hash (a plain FNV-64a of
// the record): records of one shard share that hash modulo Shards, not this
// one.
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

// The batch encoding: magic, version, payload, CRC-32C of everything before
// it. The payload holds the destination, window, pane, shard, shard count,
// then (from version 2 on) the sub-batch and the sub-batch count, then the
// records, each length-prefixed (uvarint). It is not framed with the coder
// package's Frame, whose payloads are bounded to 1 MiB. Version 1, which had
// no sub-batches, still decodes, as sub-batch 0 of 1.
var batchMagic = [4]byte{'S', '3', 'W', 'B'}

const batchVersion = 2

// errBatchEncoding is wrapped by every batch decoding error.
var errBatchEncoding = errors.New("s3once sink: malformed batch encoding")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeBatch(b batch) ([]byte, error) {
	if b.Shards < 1 || b.Shards > MaxShards || b.Shard < 0 || b.Shard >= b.Shards || b.Pane < 0 ||
		b.SubBatches < 1 || b.SubBatches > maxSubBatches || b.SubBatch < 0 || b.SubBatch >= b.SubBatches {
		return nil, fmt.Errorf("s3once sink: cannot encode batch: shard %d of %d, sub-batch %d of %d, pane %d", b.Shard, b.Shards, b.SubBatch, b.SubBatches, b.Pane)
	}
	size := 5 + 4 + 7*binary.MaxVarintLen64 + len(b.Destination) + len(b.Window)
	for _, l := range b.Lines {
		size += uvarintLen(uint64(len(l))) + len(l)
	}
	out := make([]byte, 0, size)
	out = append(out, batchMagic[:]...)
	out = append(out, batchVersion)
	out = appendString(out, b.Destination)
	out = appendString(out, b.Window)
	out = binary.AppendUvarint(out, uint64(b.Pane))
	out = binary.AppendUvarint(out, uint64(b.Shard))
	out = binary.AppendUvarint(out, uint64(b.Shards))
	out = binary.AppendUvarint(out, uint64(b.SubBatch))
	out = binary.AppendUvarint(out, uint64(b.SubBatches))
	out = binary.AppendUvarint(out, uint64(len(b.Lines)))
	for _, l := range b.Lines {
		out = binary.AppendUvarint(out, uint64(len(l)))
		out = append(out, l...)
	}
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)), nil
}

// decodeBatch decodes what encodeBatch wrote. The records alias data.
func decodeBatch(data []byte) (batch, error) {
	fail := func(format string, args ...any) (batch, error) {
		return batch{}, fmt.Errorf("%w: %s", errBatchEncoding, fmt.Sprintf(format, args...))
	}
	if len(data) < 5+4 {
		return fail("%d bytes is too short", len(data))
	}
	if [4]byte(data[:4]) != batchMagic {
		return fail("bad magic %q", data[:4])
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return fail("CRC-32C %08x, stored %08x", got, sum)
	}
	version := data[4]
	if version < 1 || version > batchVersion {
		return fail("version %d (this build reads versions 1 to %d)", version, batchVersion)
	}
	r := fieldReader{b: body[5:]}
	var b batch
	b.Destination = r.str(MaxDestinationLen)
	b.Window = r.str(256)
	pane := r.uvarint(math.MaxInt64)
	shard := r.uvarint(MaxShards - 1)
	shards := r.uvarint(MaxShards)
	sub, subs := uint64(0), uint64(1)
	if version >= 2 {
		sub = r.uvarint(maxSubBatches - 1)
		subs = r.uvarint(maxSubBatches)
	}
	count := r.uvarint(uint64(len(r.b)))
	if r.err != nil {
		return fail("%v", r.err)
	}
	b.Pane, b.Shard, b.Shards = int64(pane), int(shard), int(shards)
	b.SubBatch, b.SubBatches = int(sub), int(subs)
	if b.Shards < 1 || b.Shard >= b.Shards {
		return fail("shard %d of %d", b.Shard, b.Shards)
	}
	if b.SubBatches < 1 || b.SubBatch >= b.SubBatches {
		return fail("sub-batch %d of %d", b.SubBatch, b.SubBatches)
	}
	if err := checkPath("destination", b.Destination, MaxDestinationLen); err != nil {
		return fail("%v", err)
	}
	if b.Window == "" {
		return fail("empty window name")
	}
	b.Lines = make([][]byte, 0, count)
	for i := uint64(0); i < count; i++ {
		n := r.uvarint(uint64(len(r.b)))
		l := r.take(int(n))
		if r.err != nil {
			return fail("record %d: %v", i, r.err)
		}
		b.Lines = append(b.Lines, l)
	}
	if len(r.b) != 0 {
		return fail("%d unexpected bytes after the records", len(r.b))
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// fieldReader takes minimal uvarints and byte strings off b. The first failure
// sticks.
type fieldReader struct {
	b   []byte
	err error
}

func (r *fieldReader) uvarint(max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	switch {
	case n == 0:
		r.err = errors.New("input ends inside a number")
		return 0
	case n < 0:
		r.err = errors.New("number overflows 64 bits")
		return 0
	case n != uvarintLen(v):
		r.err = errors.New("number is not minimally encoded")
		return 0
	case v > max:
		r.err = fmt.Errorf("number %d exceeds its bound %d", v, max)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *fieldReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = fmt.Errorf("field of %d bytes but %d remain", n, len(r.b))
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *fieldReader) str(max int) string {
	n := r.uvarint(uint64(max))
	return string(r.take(int(n)))
}
