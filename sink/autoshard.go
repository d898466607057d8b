package sink

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/s3once/s3once/internal/pack"
)

// Automatic sharding (Config.TargetFileBytes) gives each destination and
// window ceil(record bytes / TargetFileBytes) shards, between 1 and Shards.
// The count must be a function of the records alone, the same on every
// rerun, runner and bundling, so it is never read from a side input (a
// runner may run a stage before a global-window side input is complete) or
// from anything timing decides. Instead the records are joined with their
// destination's byte count:
//
//  1. Encode keys each record by (destination, join bucket): the output
//     version 2 shard hash over autoJoinBuckets buckets. The buckets only
//     spread the join over workers; they appear in no name and no byte.
//  2. Sizes sums the record bytes of each destination per window
//     (CombinePerKey), and fans the sum out to every join bucket of the
//     destination.
//  3. A CoGroupByKey brings each bucket's records and its destination's sum
//     together; Assign computes the count and keys each record by
//     (shard, count, destination) (countedShardKey), where the shard is the
//     same hash over count shards.
//
// The Group, Batch and later stages then run as with fixed Shards, the
// batches carrying the count from the key. The cost is one more shuffle of
// the records and a combine of one number per pack (BENCHMARKS.md).
//
// A window's count and its records must meet in one pane, so the input must
// have the default trigger, which fires a window once, and no late panes:
// AllowedLateness 0, unless the input is bounded (whose data is never late).
// autoShardingFits checks this while the pipeline is built.
const autoJoinBuckets = 16

func init() {
	register.DoFn3x1[[]byte, []byte, func([]byte, int64), error](&sizeFn{})
	register.Emitter2[[]byte, int64]()
	register.Function2x1(sumBytes)
	register.DoFn3x0[[]byte, int64, func([]byte, int64)](&fanOutFn{})
	register.DoFn5x1[context.Context, []byte, func(*[]byte) bool, func(*int64) bool, func([]byte, []byte), error](&assignFn{})
	register.Iter1[int64]()
	register.Emitter2[[]byte, []byte]()
}

// autoShardingFits reports why automatic sharding cannot run on col, or ""
// if it can.
func autoShardingFits(s beam.Scope, col beam.PCollection) string {
	ws := col.WindowingStrategy()
	if ws == nil {
		return "the input's windowing is unknown"
	}
	switch ws.Trigger.(type) {
	case nil, *trigger.DefaultTrigger, trigger.DefaultTrigger:
	default:
		return fmt.Sprintf("the input has a trigger (%T): a window's byte count and its records must meet in its one pane, which only the default trigger guarantees", ws.Trigger)
	}
	if ws.AllowedLateness != 0 {
		if bounded, known := inputBoundedness(s, col); !known || !bounded {
			return fmt.Sprintf("the input allows late data (AllowedLateness %d ms): a late pane's records and its byte count could fire apart", ws.AllowedLateness)
		}
	}
	return ""
}

// withAutoShards turns Encode's output, keyed by join bucket, into records
// keyed by countedShardKey (see the top of this file).
func withAutoShards(s beam.Scope, st settings, keyed beam.PCollection) (beam.PCollection, error) {
	s = s.Scope("AutoShards")
	sizes, err := single(beam.TryParDo(s.Scope("Sizes"), &sizeFn{}, keyed))
	if err != nil {
		return beam.PCollection{}, err
	}
	sums, err := beam.TryCombinePerKey(s.Scope("Sum"), sumBytes, sizes)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("s3once sink: %w", err)
	}
	fanned, err := single(beam.TryParDo(s.Scope("FanOut"), &fanOutFn{}, sums))
	if err != nil {
		return beam.PCollection{}, err
	}
	joined, err := beam.TryCoGroupByKey(s.Scope("Join"), keyed, fanned)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("s3once sink: %w", err)
	}
	return single(beam.TryParDo(s.Scope("Assign"), &assignFn{Target: st.TargetFileBytes, Shards: st.Shards}, joined))
}

// sizeFn emits, for each pack, its destination and the bytes of its
// records (a function of the records, not of how they were packed).
type sizeFn struct{}

func (sizeFn) ProcessElement(key, p []byte, emit func([]byte, int64)) error {
	_, dest, err := parseShardKey(key)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	n, err := pack.RecordBytes(p)
	if err != nil {
		return err
	}
	emit([]byte(dest), n)
	return nil
}

func sumBytes(a, b int64) int64 { return a + b }

// fanOutFn sends a destination's byte count to each of its join buckets.
type fanOutFn struct{}

func (fanOutFn) ProcessElement(dest []byte, total int64, emit func([]byte, int64)) {
	for j := range autoJoinBuckets {
		emit(shardKey(j, string(dest)), total)
	}
}

// assignFn keys the records of one join bucket by their shard among their
// destination's count. It carries the two settings it reads.
type assignFn struct {
	Target int64 `json:"target"`
	Shards int   `json:"shards"`
}

// autoShardCount is the shard count of a destination and window holding
// total record bytes: ceil(total / target), at least 1, at most bound.
func autoShardCount(total, target int64, bound int) int {
	n := total / target
	if total%target != 0 {
		n++
	}
	return int(min(max(n, 1), int64(bound)))
}

func (f *assignFn) ProcessElement(ctx context.Context, key []byte, packs func(*[]byte) bool, totals func(*int64) bool, emit func([]byte, []byte)) error {
	_, dest, err := parseShardKey(key)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	var total, t int64
	seen := 0
	for totals(&t) {
		total, seen = t, seen+1
	}
	u := pack.NewReader(packs)
	var rec []byte
	if !u.Next(&rec) {
		// A bucket no record of this window hashed to: nothing to do.
		return u.Err()
	}
	if seen != 1 {
		return fmt.Errorf("s3once sink: destination %q: automatic sharding met its records with %d byte counts in one pane, want 1 (a trigger or late data the pipeline was not built for)", dest, seen)
	}
	count := autoShardCount(total, f.Target, f.Shards)
	sh, err := newSharder(2, count)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	// Each shard's records leave in packs (pack.Packer), emitted in this
	// element's window as they fill and at the end; the order does not
	// matter, Batch sorts. The packs' event times are not used: the
	// element's own stands.
	keys := make([][]byte, count)
	var open pack.Packer[beam.EventTime]
	out := func(_ beam.EventTime, k, p []byte) { emit(k, p) }
	for ok := true; ok; ok = u.Next(&rec) {
		s := sh.Of(rec)
		if keys[s] == nil {
			keys[s] = countedShardKey(s, count, dest)
		}
		open.Add(keys[s], 0, rec, out)
	}
	if err := u.Err(); err != nil {
		return err
	}
	open.Flush(out)
	return nil
}
