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

// batch is every record of one shard of one destination, window and pane,
// sorted bytewise: the writer's element. Sorting makes a file's bytes a
// function of the set of records it holds, whatever order the runner handed
// them over in.
type batch struct {
	Destination string
	Window      string
	Pane        int64
	Shard       int
	Shards      int
	Lines       [][]byte
}

// batchFn gathers a group into a batch. It holds at most MaxBatchBytes of
// records; a larger group fails with an error that names it.
type batchFn struct {
	S settings `json:"s"`
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
	b := batch{Destination: dest, Window: win, Pane: pane.Index, Shard: shard, Shards: f.S.Shards}
	var (
		chunk []byte
		total int64
		line  []byte
	)
	for values(&line) {
		total += int64(len(line))
		if total > f.S.MaxBatchBytes {
			return fmt.Errorf("s3once sink: destination %q, window %s, pane %d, shard %d of %d holds more than MaxBatchBytes (%d bytes) of records; raise Shards (now %d) so each shard holds less, or raise MaxBatchBytes (a worker holds one batch in memory)",
				dest, win, pane.Index, shard, f.S.Shards, f.S.MaxBatchBytes, f.S.Shards)
		}
		if len(line) > arenaChunk/4 {
			b.Lines = append(b.Lines, append([]byte(nil), line...))
			continue
		}
		if cap(chunk)-len(chunk) < len(line) {
			chunk = make([]byte, 0, arenaChunk)
		}
		start := len(chunk)
		chunk = append(chunk, line...)
		b.Lines = append(b.Lines, chunk[start:len(chunk):len(chunk)])
	}
	slices.SortFunc(b.Lines, bytes.Compare)
	emit(b)
	return nil
}

// The batch encoding: magic, version, payload, CRC-32C of everything before
// it. The payload holds the destination, window, pane, shard, shard count and
// the records, each length-prefixed (uvarint). It is not framed with the coder
// package's Frame, whose payloads are bounded to 1 MiB.
var batchMagic = [4]byte{'S', '3', 'W', 'B'}

const batchVersion = 1

// errBatchEncoding is wrapped by every batch decoding error.
var errBatchEncoding = errors.New("s3once sink: malformed batch encoding")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeBatch(b batch) ([]byte, error) {
	if b.Shards < 1 || b.Shards > MaxShards || b.Shard < 0 || b.Shard >= b.Shards || b.Pane < 0 {
		return nil, fmt.Errorf("s3once sink: cannot encode batch: shard %d of %d, pane %d", b.Shard, b.Shards, b.Pane)
	}
	size := 5 + 4 + 5*binary.MaxVarintLen64 + len(b.Destination) + len(b.Window)
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
	if v := data[4]; v != batchVersion {
		return fail("version %d (this build reads version %d)", v, batchVersion)
	}
	r := fieldReader{b: body[5:]}
	var b batch
	b.Destination = r.str(MaxDestinationLen)
	b.Window = r.str(256)
	pane := r.uvarint(math.MaxInt64)
	shard := r.uvarint(MaxShards - 1)
	shards := r.uvarint(MaxShards)
	count := r.uvarint(uint64(len(r.b)))
	if r.err != nil {
		return fail("%v", r.err)
	}
	b.Pane, b.Shard, b.Shards = int64(pane), int(shard), int(shards)
	if b.Shards < 1 || b.Shard >= b.Shards {
		return fail("shard %d of %d", b.Shard, b.Shards)
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
