// Package batchwire is the encoding of a batch, the sink's writer element:
// the records of one shard of one destination, window and pane, sorted,
// with a header that says which. A batch lives only in the runner: between
// the sink's Batch stage and its writer, and in the writer's checkpoints
// (its residuals hold the batch); no byte of a file depends on it. But a
// checkpoint may be restored by a later build, so every version a build
// wrote still decodes, and golden files under testdata/ hold one of each.
//
// Version 3 is one frame of internal/frame (frame.Framing, magic "S3WB",
// a bound of frame.MaxLength) around the payload: the destination, the
// window (length-prefixed strings), the pane, the shard, the shard count,
// the sub-batch, the sub-batch count and the number of records (minimal
// uvarints), then the records, each length-prefixed (uvarint). The payload
// is written in place into the frame and the decoded records alias the
// input. Version 4 is the same with the records compressed (chunks.go);
// Encode writes it for all but the smallest batches, and decoding it copies
// the records once, into the buffer they are decompressed into.
//
// Versions 1 and 2 (written before version 3) had their own frame: magic,
// version, payload, CRC-32C of everything before it, with no length field.
// Their payloads are version 3's, without the sub-batch fields in version 1
// (sub-batch 0 of 1). They still decode, so that batches in checkpoints
// taken by an earlier build are read by this one. testdata/batch_v1.bin and
// batch_v2*.bin are examples of them, batch_v3*.bin of version 3,
// batch_v4.bin of version 4.
//
// Decode checks the header and every record's framing, but leaves the
// records of versions 3 and 4 encoded (Records): the writer reserves memory
// for a batch before it splits its records, and a batch it gives back to
// the runner goes back as the bytes it came in.
package batchwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/s3once/s3once/internal/frame"
)

// Header is what a batch says of its records: where they go (destination,
// window, pane), which shard of how many they are, and which sub-batch of
// how many, for a shard split into several batches.
type Header struct {
	Destination string
	Window      string
	Pane        int64
	Shard       int
	Shards      int
	SubBatch    int
	SubBatches  int
}

// Codec encodes and decodes batches whose header fields keep the sink's
// bounds.
type Codec struct {
	// MaxShards bounds the shard count, MaxSubBatches the sub-batch count.
	MaxShards, MaxSubBatches int
	// MaxDestination bounds the destination's length, in bytes;
	// CheckDestination, when not nil, checks a decoded destination.
	MaxDestination   int
	CheckDestination func(string) error
}

var batchFraming = frame.Framing{Magic: [4]byte{'S', '3', 'W', 'B'}, MaxPayload: maxPayload}

const (
	plain     = 3 // records as they are
	packed    = 4 // records in chunks (chunks.go)
	newest    = packed
	maxWindow = 256 // bounds a window's name
	// maxPayload bounds a batch's payload: the sink's largest batch of
	// records with their length prefixes and the header fields fits under
	// it (for records of 4 bytes or more, terminator included), and so does
	// the frame's four-byte length field.
	maxPayload = frame.MaxLength
)

// ErrMalformed is wrapped by every error of a batch that does not decode.
var ErrMalformed = errors.New("malformed batch")

// Encode encodes a batch of lines: as version 4, or version 3 for a batch
// too small to gain from compression.
func (c Codec) Encode(h Header, lines [][]byte) ([]byte, error) {
	return c.encode(h, lines, 0)
}

// encode encodes a batch as version 3 or 4, or, given 0, as the records'
// size calls for (see Encode).
func (c Codec) encode(h Header, lines [][]byte, version byte) ([]byte, error) {
	if h.Shards < 1 || h.Shards > c.MaxShards || h.Shard < 0 || h.Shard >= h.Shards || h.Pane < 0 ||
		h.SubBatches < 1 || h.SubBatches > c.MaxSubBatches || h.SubBatch < 0 || h.SubBatch >= h.SubBatches {
		return nil, fmt.Errorf("cannot encode batch: shard %d of %d, sub-batch %d of %d, pane %d", h.Shard, h.Shards, h.SubBatch, h.SubBatches, h.Pane)
	}
	section, recBytes := sectionLen(lines)
	if version == 0 {
		version = plain
		if section >= compressMin {
			version = packed
		}
	}
	size := 8*binary.MaxVarintLen64 + len(h.Destination) + len(h.Window) + section
	if version == packed {
		// At worst every chunk is stored, with its kind and length.
		size += (section/chunkBytes + 1) * (1 + binary.MaxVarintLen32)
	}
	out, err := batchFraming.Begin(version, size)
	if err != nil {
		return nil, fmt.Errorf("cannot encode batch: %w", err)
	}
	out = appendString(out, h.Destination)
	out = appendString(out, h.Window)
	out = binary.AppendUvarint(out, uint64(h.Pane))
	out = binary.AppendUvarint(out, uint64(h.Shard))
	out = binary.AppendUvarint(out, uint64(h.Shards))
	out = binary.AppendUvarint(out, uint64(h.SubBatch))
	out = binary.AppendUvarint(out, uint64(h.SubBatches))
	out = binary.AppendUvarint(out, uint64(len(lines)))
	if version == packed {
		out = appendChunks(out, lines, section, recBytes)
	} else {
		for _, l := range lines {
			out = binary.AppendUvarint(out, uint64(len(l)))
			out = append(out, l...)
		}
	}
	if out, err = batchFraming.End(out); err != nil {
		return nil, fmt.Errorf("cannot encode batch of %d records: %w", len(lines), err)
	}
	if cap(out) > 2*len(out) {
		// Compressed well: keep no room for the records uncompressed.
		out = bytes.Clone(out)
	}
	return out, nil
}

// sectionLen is the size of lines' records section (each record's length
// as a uvarint, and the record), and the records' bytes.
func sectionLen(lines [][]byte) (section int, recBytes int64) {
	for _, l := range lines {
		section += frame.UvarintLen(uint64(len(l))) + len(l)
		recBytes += int64(len(l))
	}
	return section, recBytes
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// Records are a decoded batch's records, checked but, for versions 3 and 4,
// still encoded in the bytes they were decoded from.
type Records struct {
	frame   []byte     // the batch's encoding, for versions 3 and 4
	lines   [][]byte   // the records, split, for versions 1 and 2
	records []byte     // the length-prefixed records, aliasing frame (version 3)
	chunks  *chunkList // instead of records, for version 4
	count   int64
	bytes   int64
}

// Count is the number of records.
func (r *Records) Count() int64 { return r.count }

// Bytes is the records' bytes, length prefixes left out.
func (r *Records) Bytes() int64 { return r.bytes }

// Frame is the encoding the records were decoded from, which Encode would
// write for them again (the same version, the same bytes); nil for a batch
// of version 1 or 2, which this build writes as version 3.
func (r *Records) Frame() []byte { return r.frame }

// Lines splits the records: a slice header each, aliasing the batch's
// encoding, or, for version 4, a buffer they are decompressed into. Damage
// that only decompressing shows is an error wrapping ErrMalformed.
func (r *Records) Lines() ([][]byte, error) {
	if r.frame == nil {
		return r.lines, nil
	}
	return r.split()
}

func (r *Records) split() ([][]byte, error) {
	records := r.records
	if r.chunks != nil {
		var err error
		if records, err = r.chunks.decompress(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	fr := frame.NewReader("batch", records)
	lines := make([][]byte, 0, r.count)
	var size int64
	for range r.count {
		l := fr.Bytes("record", 0, fr.Remaining())
		lines = append(lines, l)
		size += int64(len(l))
	}
	if err := fr.Finish(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if size != r.bytes {
		return nil, fmt.Errorf("%w: %d bytes of records, %d were announced", ErrMalformed, size, r.bytes)
	}
	return lines, nil
}

// Decode decodes what Encode wrote, or what a build before version 3
// wrote. The header's strings are copies; the records alias data (but for
// version 4's, once decompressed).
func (c Codec) Decode(data []byte) (Header, *Records, error) {
	var (
		version byte
		payload []byte
		err     error
	)
	if len(data) > 4 && [4]byte(data[:4]) == batchFraming.Magic && (data[4] == 1 || data[4] == 2) {
		version, payload, err = decodeLegacy(data)
	} else {
		version, payload, err = batchFraming.Unframe(newest, data)
	}
	if err != nil {
		return Header{}, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	h, r, err := c.decodePayload(version, payload)
	if err != nil {
		return Header{}, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if version < plain {
		// Split now: this build writes such a batch as version 3, so its
		// bytes are of no more use.
		if r.lines, err = r.split(); err != nil {
			return Header{}, nil, err
		}
		r.records = nil
		return h, r, nil
	}
	r.frame = data
	return h, r, nil
}

// decodeLegacy checks the frame of versions 1 and 2 and returns the
// version and the payload (aliasing data).
func decodeLegacy(data []byte) (byte, []byte, error) {
	if len(data) < 5+4 {
		return 0, nil, fmt.Errorf("%d bytes is too short", len(data))
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)); got != sum {
		return 0, nil, fmt.Errorf("CRC-32C %08x, stored %08x", got, sum)
	}
	return data[4], body[5:], nil
}

// decodePayload reads a payload of the given version (1 to 4) and checks
// its records, which it leaves encoded (for version 4, it checks the
// chunks' framing and sizes; their records show when they are
// decompressed).
func (c Codec) decodePayload(version byte, payload []byte) (Header, *Records, error) {
	r := frame.NewReader("batch", payload)
	var h Header
	h.Destination = r.String("destination", 0, c.MaxDestination)
	h.Window = r.String("window", 0, maxWindow)
	pane := r.Uvarint("pane", math.MaxInt64)
	shard := r.Uvarint("shard", uint64(c.MaxShards-1))
	shards := r.Uvarint("shard count", uint64(c.MaxShards))
	sub, subs := uint64(0), uint64(1)
	if version >= 2 {
		sub = r.Uvarint("sub-batch", uint64(c.MaxSubBatches-1))
		subs = r.Uvarint("sub-batch count", uint64(c.MaxSubBatches))
	}
	var count, recBytes uint64
	if version == packed {
		count = r.Uvarint("record count", maxPayload)
		recBytes = r.Uvarint("record bytes", maxPayload)
	} else {
		count = r.Uvarint("record count", uint64(r.Remaining()))
	}
	if err := r.Err(); err != nil {
		return Header{}, nil, err
	}
	h.Pane, h.Shard, h.Shards = int64(pane), int(shard), int(shards)
	h.SubBatch, h.SubBatches = int(sub), int(subs)
	if h.Shards < 1 || h.Shard >= h.Shards {
		return Header{}, nil, fmt.Errorf("shard %d of %d", h.Shard, h.Shards)
	}
	if h.SubBatches < 1 || h.SubBatch >= h.SubBatches {
		return Header{}, nil, fmt.Errorf("sub-batch %d of %d", h.SubBatch, h.SubBatches)
	}
	if c.CheckDestination != nil {
		if err := c.CheckDestination(h.Destination); err != nil {
			return Header{}, nil, err
		}
	}
	if h.Window == "" {
		return Header{}, nil, errors.New("empty window name")
	}
	recs := &Records{records: payload[len(payload)-r.Remaining():]}
	if version == packed {
		chunks, err := readChunks(recs.records)
		if err != nil {
			return Header{}, nil, err
		}
		if count > uint64(chunks.section) || recBytes > uint64(chunks.section)-count {
			return Header{}, nil, fmt.Errorf("%d records of %d bytes in a records section of %d bytes", count, recBytes, chunks.section)
		}
		recs.chunks, recs.records = chunks, nil
	} else {
		for range count {
			recBytes += uint64(len(r.Bytes("record", 0, r.Remaining())))
		}
		if err := r.Finish(); err != nil {
			return Header{}, nil, err
		}
	}
	recs.count, recs.bytes = int64(count), int64(recBytes)
	return h, recs, nil
}
