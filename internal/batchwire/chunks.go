package batchwire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"

	"github.com/s3once/s3once/internal/frame"
)

// Version 4 carries the records compressed. Its payload is version 3's
// header fields and record count, then the record bytes (a uvarint: the
// sum of the records' lengths, so that the writer can reserve memory for
// the batch before it decompresses anything), then chunks until the
// payload ends. The chunks, concatenated, are version 3's records section
// (each record a uvarint of its length, then its bytes), cut every
// chunkBytes; each is a kind byte, a uvarint length n and n bytes:
//
//   - chunkStored: the n bytes themselves;
//   - chunkS2: an s2 block (github.com/klauspost/compress/s2) of them.
//
// A chunk holds 1 to chunkBytes bytes of the section. The encoder stores a
// chunk that s2 does not shrink by an eighth, so records that do not
// compress cost one failed attempt per chunk and a few bytes a mebibyte.
//
// Like record packs, batches live only in the runner. The runner copies
// every byte of an element several times at the writer's stage boundary
// (BENCHMARKS.md, the floor), so fewer bytes there are time saved. Encode
// writes version 4 for a batch of at least compressMin bytes of records
// section, version 3 below it.
const (
	chunkStored = 0
	chunkS2     = 1
	chunkBytes  = 1 << 20
	// compressMin: a smaller batch saves the runner little.
	compressMin = 4 << 10
)

// chunkWriter appends a records section to out as version 4's chunks.
type chunkWriter struct {
	out []byte
	buf []byte // the section's bytes not yet in a chunk
	enc []byte // s2's output
}

func newChunkWriter(out []byte, section int) *chunkWriter {
	n := min(section, chunkBytes)
	return &chunkWriter{out: out, buf: make([]byte, 0, n), enc: make([]byte, s2.MaxEncodedLen(n))}
}

func (c *chunkWriter) write(p []byte) {
	for len(p) > 0 {
		k := min(len(p), cap(c.buf)-len(c.buf))
		c.buf = append(c.buf, p[:k]...)
		p = p[k:]
		if len(c.buf) == cap(c.buf) {
			c.flush()
		}
	}
}

func (c *chunkWriter) record(rec []byte) {
	var prefix [binary.MaxVarintLen64]byte
	c.write(prefix[:binary.PutUvarint(prefix[:], uint64(len(rec)))])
	c.write(rec)
}

// flush ends the current chunk, compressed if that saves an eighth of it.
func (c *chunkWriter) flush() {
	n := len(c.buf)
	if n == 0 {
		return
	}
	body := s2.Encode(c.enc, c.buf)
	if len(body) <= n-n/8 {
		c.out = append(c.out, chunkS2)
	} else {
		c.out, body = append(c.out, chunkStored), c.buf
	}
	c.out = binary.AppendUvarint(c.out, uint64(len(body)))
	c.out = append(c.out, body...)
	c.buf = c.buf[:0]
}

// appendChunks appends version 4's record bytes and chunks of lines to
// out; section and recBytes are sectionLen(lines).
func appendChunks(out []byte, lines [][]byte, section int, recBytes int64) []byte {
	out = binary.AppendUvarint(out, uint64(recBytes))
	c := newChunkWriter(out, section)
	for _, l := range lines {
		c.record(l)
	}
	c.flush()
	return c.out
}

// chunkList describes version 4's chunks as readChunks checked them: the
// section's length and where the chunks are.
type chunkList struct {
	chunks  []byte // the chunks, aliasing the payload
	section int64  // the records section's length, decompressed
}

// eachChunk calls f with each of version 4's chunks in turn, its kind and
// its bytes, and stops at the first error, f's or the framing's.
func eachChunk(chunks []byte, f func(kind byte, body []byte) error) error {
	r := frame.NewReader("batch", chunks)
	for r.Remaining() > 0 {
		kind := r.U8("chunk kind")
		body := r.Take("chunk", int(r.Uvarint("chunk length", uint64(r.Remaining()))))
		if err := r.Err(); err != nil {
			return err
		}
		if err := f(kind, body); err != nil {
			return err
		}
	}
	return nil
}

// readChunks checks the framing of version 4's chunks (every chunk's kind
// and length, and each s2 block's decoded length) without decompressing
// them.
func readChunks(chunks []byte) (*chunkList, error) {
	var section int64
	err := eachChunk(chunks, func(kind byte, body []byte) error {
		n := len(body)
		switch kind {
		case chunkStored:
		case chunkS2:
			var err error
			if n, err = s2.DecodedLen(body); err != nil {
				return fmt.Errorf("chunk at %d: %w", section, err)
			}
		default:
			return fmt.Errorf("chunk at %d: kind %d, want %d or %d", section, kind, chunkStored, chunkS2)
		}
		if n < 1 || n > chunkBytes {
			return fmt.Errorf("chunk at %d holds %d bytes, want 1 to %d", section, n, chunkBytes)
		}
		section += int64(n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if section > maxPayload {
		return nil, fmt.Errorf("chunks of %d bytes, more than a batch holds (%d)", section, int64(maxPayload))
	}
	return &chunkList{chunks: chunks, section: section}, nil
}

// decompress returns the records section of chunks that readChunks
// accepted, in a new buffer.
func (c *chunkList) decompress() ([]byte, error) {
	out := make([]byte, c.section)
	pos := 0
	err := eachChunk(c.chunks, func(kind byte, body []byte) error {
		if kind == chunkStored {
			pos += copy(out[pos:], body)
			return nil
		}
		n, err := s2.DecodedLen(body)
		if err != nil || n > len(out)-pos {
			return fmt.Errorf("chunk at %d: %d bytes (%v), where %d are left", pos, n, err, len(out)-pos)
		}
		got, err := s2.Decode(out[pos:pos+n], body)
		if err != nil {
			return fmt.Errorf("chunk at %d: %w", pos, err)
		}
		if len(got) != n || (n > 0 && &got[0] != &out[pos]) {
			return errors.New("an s2 block decoded elsewhere than asked")
		}
		pos += n
		return nil
	})
	if err != nil {
		return nil, err
	}
	if pos != len(out) {
		return nil, fmt.Errorf("chunks of %d bytes, %d were announced", pos, len(out))
	}
	return out, nil
}
