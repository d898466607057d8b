package bench

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// The packed shuffle: the least a sink that shards its records costs on the
// runner once it packs them before its shuffle, as the sink's Encode stage
// does ("packed"), and with the boundary a splittable writer adds after it
// ("packed-sdf"). Both run as sides of BenchmarkPipelineFloor.

func init() {
	register.DoFn2x0[string, func(uint64, []byte)](&packFn{})
	register.DoFn2x0[uint64, func(*[]byte) bool](&discardPacksFn{})
	register.DoFn3x0[uint64, func(*[]byte) bool, func(uint64, []byte)](&joinPacksFn{})
	register.DoFn3x1[*sdf.LockRTracker, uint64, []byte, error](&discardSDFFn{})
	register.Emitter2[uint64, []byte]()
	register.Iter1[[]byte]()
}

// packSize is the size at which packFn hands a pack over, the sink's pack
// size.
const packSize = 1 << 20

// packFn keys each record by a hash over floorShards keys, as shuffleKeyFn
// does, but packs each key's records (each after its length, a uvarint)
// into packs of about packSize bytes: the runner moves a few large elements
// instead of one per record.
type packFn struct {
	bufs [floorShards][]byte
}

func (f *packFn) ProcessElement(r string, emit func(uint64, []byte)) {
	k := maphash.String(shuffleSeed, r) % floorShards
	b := f.bufs[k]
	if b == nil {
		b = make([]byte, 0, packSize+packSize/8)
	}
	b = binary.AppendUvarint(b, uint64(len(r)))
	b = append(b, r...)
	if len(b) >= packSize {
		emit(k, b)
		b = nil
	}
	f.bufs[k] = b
}

// FinishBundle emits the packs the bundle left open.
func (f *packFn) FinishBundle(emit func(uint64, []byte)) {
	for k, b := range f.bufs {
		if len(b) > 0 {
			emit(uint64(k), b)
		}
		f.bufs[k] = nil
	}
}

// packRecords counts the records of a pack; a malformed pack counts
// negative, which fails the benchmark's count check.
func packRecords(p []byte) int64 {
	var n int64
	for len(p) > 0 {
		l, w := binary.Uvarint(p)
		if w <= 0 || uint64(len(p)-w) < l {
			return -1
		}
		p = p[w+int(l):]
		n++
	}
	return n
}

// discardPacksFn reads a group of packs and drops it, counting its records.
type discardPacksFn struct{}

func (*discardPacksFn) ProcessElement(_ uint64, packs func(*[]byte) bool) {
	var p []byte
	var n int64
	for packs(&p) {
		n += packRecords(p)
	}
	shuffled.Add(n)
}

// joinPacksFn joins a group's packs into one element, as the sink's Batch
// stage gathers a shard's records into one batch for its writer.
type joinPacksFn struct{}

func (*joinPacksFn) ProcessElement(k uint64, packs func(*[]byte) bool, emit func(uint64, []byte)) {
	var all, p []byte
	for packs(&p) {
		all = append(all, p...)
	}
	emit(k, all)
}

// discardSDFFn is a splittable DoFn that drops each element, counting its
// records. A runner starts a stage at a splittable DoFn (prism always
// does), so its input crosses the runner once more, as the sink's batches
// do on their way to its writer.
type discardSDFFn struct{}

func (*discardSDFFn) CreateInitialRestriction(uint64, []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: 1}
}

func (*discardSDFFn) SplitRestriction(_ uint64, _ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (*discardSDFFn) RestrictionSize(uint64, []byte, offsetrange.Restriction) float64 { return 1 }

func (*discardSDFFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (*discardSDFFn) ProcessElement(rt *sdf.LockRTracker, _ uint64, b []byte) error {
	if rt.TryClaim(int64(0)) {
		shuffled.Add(packRecords(b))
	}
	return nil
}

// packedShuffle adds a packed shuffle of col to s: the records packed,
// grouped by key and discarded (side "packed"), or each group joined into
// one element and discarded by a splittable DoFn ("packed-sdf").
func packedShuffle(s beam.Scope, col beam.PCollection, side string) {
	grouped := beam.GroupByKey(s, beam.ParDo(s, &packFn{}, col))
	if side == "packed" {
		beam.ParDo0(s, &discardPacksFn{}, grouped)
		return
	}
	beam.ParDo0(s, &discardSDFFn{}, beam.ParDo(s, &joinPacksFn{}, grouped))
}
