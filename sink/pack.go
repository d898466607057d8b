package sink

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/klauspost/compress/s2"
)

// A pack is the value of Encode's output and Batch's input: records of one
// shard key. Its first byte is its version. In version 1 (packVersion) the
// records follow, each a uvarint of its length and then its bytes, and
// nothing else. In version 2 (packCompressed) the same bytes follow as one
// s2 block (github.com/klauspost/compress/s2), which must decode to at most
// packCompressMax bytes.
//
// A pack lives only between those two stages, in the runner's shuffle: it
// is never written to S3, and no byte of a file depends on how records were
// packed or whether a pack was compressed. The runner copies every byte it
// shuffles several times (BENCHMARKS.md, the floor), so a pack goes
// compressed when that saves at least an eighth of it (sealPack); records
// that do not compress cost one failed attempt and go as they are. A
// streaming job's shuffle may hold packs when the job is updated to a new
// build; this build reads both versions, and a build that reads another
// version refuses them by name (drain the job before such an upgrade).
// testdata/pack_v1.bin and pack_v2.bin are examples.
const (
	packVersion    = 1
	packCompressed = 2
	// packBytes is the size at which an open pack is emitted. Larger packs
	// save the runner little more, and cost memory per shard key.
	packBytes = 1 << 20
	// packHeld bounds the bytes of open packs one bundle holds: past it,
	// every open pack is emitted.
	packHeld = 16 << 20
	// packCompressMin and packCompressMax bound the record bytes of a
	// pack that sealPack compresses: a smaller pack (a lone record, the
	// rest of a bundle) saves the runner little, and a larger one (a pack
	// closed by a large record) would make the reader allocate as much
	// for it at once. The reader refuses a compressed pack that decodes to
	// more than packCompressMax, so a corrupt length never makes it
	// allocate more.
	packCompressMin = 4 << 10
	packCompressMax = 4 * packBytes
)

// newPack returns an empty pack with room for n bytes of records.
func newPack(n int) []byte {
	return append(make([]byte, 0, 1+n), packVersion)
}

// appendRecord appends rec to a pack.
func appendRecord(pack, rec []byte) []byte {
	return append(binary.AppendUvarint(pack, uint64(len(rec))), rec...)
}

// openPack is a pack being filled, and the earliest event time among its
// records.
type openPack struct {
	data []byte
	ts   beam.EventTime
}

// packer gathers a bundle's records into packs per shard key.
type packer struct {
	open map[string]*openPack
	held int
}

// add appends rec to key's pack and emits the pack once it is full, or every
// open pack once they hold more than packHeld bytes together.
func (p *packer) add(key []byte, ts beam.EventTime, rec []byte, emit func(beam.EventTime, []byte, []byte)) {
	if p.open == nil {
		p.open = make(map[string]*openPack)
	}
	o := p.open[string(key)]
	if o == nil {
		o = &openPack{data: newPack(len(rec) + binary.MaxVarintLen64), ts: ts}
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
		emit(o.ts, key, sealPack(o.data))
	case p.held > packHeld:
		p.flush(emit)
	}
}

// flush emits every open pack. The packs' order does not matter: Batch sorts
// the records.
func (p *packer) flush(emit func(beam.EventTime, []byte, []byte)) {
	for k, o := range p.open {
		emit(o.ts, []byte(k), sealPack(o.data))
	}
	clear(p.open)
	p.held = 0
}

// sealPack returns the pack to hand the runner for the version 1 pack p:
// p compressed (version 2) if its records are within packCompressMin and
// packCompressMax bytes and compress to at most seven eighths of them, p
// itself otherwise.
func sealPack(p []byte) []byte {
	n := len(p) - 1
	if n < packCompressMin || n > packCompressMax {
		return p
	}
	c := make([]byte, 1+s2.MaxEncodedLen(n))
	c[0] = packCompressed
	enc := s2.Encode(c[1:], p[1:])
	if len(enc) > n-n/8 {
		return p
	}
	return c[:1+len(enc)]
}

// errPack is wrapped by the error of a malformed pack.
var errPack = errors.New("s3once sink: malformed record pack")

// unpacker reads the records of a group's packs one at a time. A record
// aliases its pack, which stays unread by the iterator until every record of
// it was taken.
type unpacker struct {
	packs func(*[]byte) bool
	rest  []byte
	err   error
}

// next sets rec to the next record and reports whether there was one; at the
// end, or at a malformed pack, it reports false, and err tells which.
func (u *unpacker) next(rec *[]byte) bool {
	for len(u.rest) == 0 {
		if u.err != nil || !u.packs(&u.rest) {
			return false
		}
		switch {
		case len(u.rest) > 0 && u.rest[0] == packVersion:
			u.rest = u.rest[1:]
		case len(u.rest) > 0 && u.rest[0] == packCompressed:
			if u.rest, u.err = decompressPack(u.rest[1:]); u.err != nil {
				return false
			}
		default:
			u.err = fmt.Errorf("%w: a pack of %d bytes does not start with version %d or %d (a pack of another build of s3once, or not a pack: drain a streaming job before updating it to another version)", errPack, len(u.rest), packVersion, packCompressed)
			u.rest = nil
			return false
		}
	}
	n, k := binary.Uvarint(u.rest)
	var minimal [binary.MaxVarintLen64]byte
	if k <= 0 || n > uint64(len(u.rest)-k) || binary.PutUvarint(minimal[:], n) != k {
		u.err = fmt.Errorf("%w: a record's length prefix is cut, not minimal, or names more bytes than the %d left", errPack, len(u.rest))
		u.rest = nil
		return false
	}
	*rec = u.rest[k : k+int(n) : k+int(n)]
	u.rest = u.rest[k+int(n):]
	return true
}

// decompressPack returns the records of a compressed pack's block, in a
// new buffer.
func decompressPack(block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: a compressed pack of %d bytes: %w", errPack, len(block), err)
	}
	if n > packCompressMax {
		return nil, fmt.Errorf("%w: a compressed pack of %d bytes says it holds %d bytes of records, more than a pack is ever compressed with (%d)", errPack, len(block), n, packCompressMax)
	}
	recs, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("%w: a compressed pack of %d bytes: %w", errPack, len(block), err)
	}
	return recs, nil
}

// failed returns the error that ended the records early, or nil.
func (u *unpacker) failed() error { return u.err }
