// Package pack is the encoding of a record pack: the value the sink's
// Encode stage hands the runner's shuffle and its Batch stage reads, one or
// more records of one shard key. Packer gathers a bundle's records into
// packs, Of makes a pack of one record, and Reader reads the records of a
// group's packs back.
//
// A pack's first byte is its version. In version 1 the records follow, each
// a uvarint of its length and then its bytes, and nothing else. In version 2
// the same bytes follow as one s2 block (github.com/klauspost/compress/s2),
// which must decode to at most compressMax bytes.
//
// A pack lives only between those two stages, in the runner's shuffle: it
// is never written to S3, and no byte of a file depends on how records were
// packed or whether a pack was compressed. The runner copies every byte it
// shuffles several times (BENCHMARKS.md, the floor), so a pack goes
// compressed when that saves at least an eighth of it (seal); records that
// do not compress cost one failed attempt and go as they are. A streaming
// job's shuffle may hold packs when the job is updated to a new build; this
// build reads both versions, and a build that reads another version refuses
// them by name (drain the job before such an upgrade). testdata/pack_v1.bin
// and pack_v2.bin are examples.
package pack

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
)

const (
	version    = 1
	compressed = 2
	// packBytes is the size at which an open pack is emitted. Larger packs
	// save the runner little more, and cost memory per shard key.
	packBytes = 1 << 20
	// packHeld bounds the bytes of open packs one bundle holds: past it,
	// every open pack is emitted.
	packHeld = 16 << 20
	// compressMin and compressMax bound the record bytes of a pack that
	// seal compresses: a smaller pack (a lone record, the rest of a bundle)
	// saves the runner little, and a larger one (a pack closed by a large
	// record) would make the reader allocate as much for it at once. The
	// reader refuses a compressed pack that decodes to more than
	// compressMax, so a corrupt length never makes it allocate more.
	compressMin = 4 << 10
	compressMax = 4 * packBytes
)

// newPack returns an empty pack with room for n bytes of records.
func newPack(n int) []byte {
	return append(make([]byte, 0, 1+n), version)
}

// appendRecord appends rec to a pack.
func appendRecord(pack, rec []byte) []byte {
	return append(binary.AppendUvarint(pack, uint64(len(rec))), rec...)
}

// Of returns a pack that holds rec alone (version 1).
func Of(rec []byte) []byte {
	return appendRecord(newPack(len(rec)+binary.MaxVarintLen64), rec)
}

// openPack is a pack being filled, and the earliest event time among its
// records.
type openPack[T cmp.Ordered] struct {
	data []byte
	ts   T
}

// Packer gathers a bundle's records into packs per shard key, each pack
// carrying the earliest event time (T) of its records. The zero Packer is
// ready to use.
type Packer[T cmp.Ordered] struct {
	open map[string]*openPack[T]
	held int
}

// Add appends rec to key's pack and emits the pack once it is full (1 MiB),
// or every open pack once they hold more than 16 MiB together. emit takes
// the pack's event time, its key and the pack; the pack is emitted sealed
// (compressed where that pays).
func (p *Packer[T]) Add(key []byte, ts T, rec []byte, emit func(T, []byte, []byte)) {
	if p.open == nil {
		p.open = make(map[string]*openPack[T])
	}
	o := p.open[string(key)]
	if o == nil {
		o = &openPack[T]{data: newPack(len(rec) + binary.MaxVarintLen64), ts: ts}
		p.open[string(key)] = o
	}
	before := len(o.data)
	o.data = appendRecord(o.data, rec)
	o.ts = min(o.ts, ts)
	p.held += len(o.data) - before
	switch {
	case len(o.data) >= packBytes:
		p.held -= len(o.data)
		delete(p.open, string(key))
		emit(o.ts, key, seal(o.data))
	case p.held > packHeld:
		p.Flush(emit)
	}
}

// Flush emits every open pack. The packs' order does not matter: the
// records are sorted after the shuffle.
func (p *Packer[T]) Flush(emit func(T, []byte, []byte)) {
	for k, o := range p.open {
		emit(o.ts, []byte(k), seal(o.data))
	}
	clear(p.open)
	p.held = 0
}

// seal returns the pack to hand the runner for the version 1 pack p: p
// compressed (version 2) if its records are within compressMin and
// compressMax bytes and compress to at most seven eighths of them, p itself
// otherwise.
func seal(p []byte) []byte {
	n := len(p) - 1
	if n < compressMin || n > compressMax {
		return p
	}
	c := make([]byte, 1+s2.MaxEncodedLen(n))
	c[0] = compressed
	enc := s2.Encode(c[1:], p[1:])
	if len(enc) > n-n/8 {
		return p
	}
	return c[:1+len(enc)]
}

// ErrMalformed is wrapped by the error of a malformed pack.
var ErrMalformed = errors.New("malformed record pack")

// Reader reads the records of a group's packs one at a time. A record
// aliases its pack, which stays unread by the iterator until every record
// of it was taken.
type Reader struct {
	packs func(*[]byte) bool
	rest  []byte
	err   error
}

// NewReader reads the packs that the iterator packs yields (a GroupByKey's
// values).
func NewReader(packs func(*[]byte) bool) *Reader { return &Reader{packs: packs} }

// Next sets rec to the next record and reports whether there was one; at
// the end, or at a malformed pack, it reports false, and Err tells which.
func (u *Reader) Next(rec *[]byte) bool {
	for len(u.rest) == 0 {
		if u.err != nil || !u.packs(&u.rest) {
			return false
		}
		switch {
		case len(u.rest) > 0 && u.rest[0] == version:
			u.rest = u.rest[1:]
		case len(u.rest) > 0 && u.rest[0] == compressed:
			if u.rest, u.err = decompress(u.rest[1:]); u.err != nil {
				return false
			}
		default:
			u.err = fmt.Errorf("%w: a pack of %d bytes does not start with version %d or %d (a pack of another build of s3once, or not a pack: drain a streaming job before updating it to another version)", ErrMalformed, len(u.rest), version, compressed)
			u.rest = nil
			return false
		}
	}
	n, k := binary.Uvarint(u.rest)
	var minimal [binary.MaxVarintLen64]byte
	if k <= 0 || n > uint64(len(u.rest)-k) || binary.PutUvarint(minimal[:], n) != k {
		u.err = fmt.Errorf("%w: a record's length prefix is cut, not minimal, or names more bytes than the %d left", ErrMalformed, len(u.rest))
		u.rest = nil
		return false
	}
	*rec = u.rest[k : k+int(n) : k+int(n)]
	u.rest = u.rest[k+int(n):]
	return true
}

// decompress returns the records of a compressed pack's block, in a new
// buffer.
func decompress(block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: a compressed pack of %d bytes: %w", ErrMalformed, len(block), err)
	}
	if n > compressMax {
		return nil, fmt.Errorf("%w: a compressed pack of %d bytes says it holds %d bytes of records, more than a pack is ever compressed with (%d)", ErrMalformed, len(block), n, compressMax)
	}
	recs, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("%w: a compressed pack of %d bytes: %w", ErrMalformed, len(block), err)
	}
	return recs, nil
}

// Err returns the error that ended the records early, or nil.
func (u *Reader) Err() error { return u.err }

// RecordBytes returns the bytes of the records of the single pack p.
func RecordBytes(p []byte) (int64, error) {
	done := false
	u := NewReader(func(out *[]byte) bool {
		if done {
			return false
		}
		done, *out = true, p
		return true
	})
	var n int64
	var rec []byte
	for u.Next(&rec) {
		n += int64(len(rec))
	}
	return n, u.Err()
}
