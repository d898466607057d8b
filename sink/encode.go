package sink

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"

	"github.com/s3once/s3once/format"
	"github.com/s3once/s3once/internal/pack"
	"github.com/s3once/s3once/internal/shard"
)

// Destination function shapes (see Config.Destination).
const (
	destNone = iota
	destElem
	destElemErr
	destWindowElem
	destWindowElemErr
)

var (
	stringType = reflect.TypeFor[string]()
	errorType  = reflect.TypeFor[error]()
)

// destinationKind checks fn against the element type and returns its shape.
func destinationKind(fn any, elem reflect.Type) (int, error) {
	if fn == nil {
		return destNone, nil
	}
	return destinationShape(reflect.TypeOf(fn), elem)
}

// destinationShape checks a Destination function's type; elem, when not
// nil, is the element type it must accept.
func destinationShape(t reflect.Type, elem reflect.Type) (int, error) {
	if t.Kind() != reflect.Func {
		return 0, fmt.Errorf("Destination must be a function, not a %v", t)
	}
	shape := "func(T) string, func(T) (string, error), func(beam.Window, T) string or func(beam.Window, T) (string, error)"
	var in reflect.Type
	kind := 0
	switch t.NumIn() {
	case 1:
		in, kind = t.In(0), destElem
	case 2:
		if t.In(0) != typex.WindowType {
			return 0, fmt.Errorf("Destination %v: its first parameter must be a beam.Window; want %s", t, shape)
		}
		in, kind = t.In(1), destWindowElem
	default:
		return 0, fmt.Errorf("Destination %v: want %s", t, shape)
	}
	switch {
	case t.NumOut() == 1 && t.Out(0) == stringType:
	case t.NumOut() == 2 && t.Out(0) == stringType && t.Out(1) == errorType:
		kind++
	default:
		return 0, fmt.Errorf("Destination %v: want %s", t, shape)
	}
	if t.IsVariadic() {
		return 0, fmt.Errorf("Destination %v must not be variadic", t)
	}
	if elem != nil && !elem.AssignableTo(in) {
		return 0, fmt.Errorf("Destination %v takes %v, but the input's elements are %v", t, in, elem)
	}
	return kind, nil
}

// encodeFn formats each element as a record and keys it by its shard:
// KV<shard key, pack>, where a pack holds one or more records of that key
// (package internal/pack). Formatting happens here so that later stages
// only move bytes, and the shard is a hash of the record's bytes, so that
// equal inputs shard equally.
//
// Input in the global window with the default trigger (all bounded input
// that is not windowed or triggered) is packed: the records of a bundle gather
// per shard key into packs of up to 1 MiB, emitted when full or at the end
// of the bundle, so that the runner shuffles a few large elements instead of
// one small element per record. That is where a runner spends most of the
// time of a pipeline that writes small records. A pack carries the earliest
// event time of its records. Elsewhere every record is a pack of its own,
// emitted in its element's window: Beam emits what a bundle's end flushes in
// the global window only, and a trigger may count elements (see packable).
// Either way Batch sees the same records and sorts them, so the files' bytes
// do not depend on packing.
//
// It carries only what it reads: the format's name, the shard count, the
// output version (which picks the shard hash, internal/shard), the record
// size bound, the Destination function and whether to pack; no bucket,
// endpoint or credentials.
type encodeFn struct {
	Format       string            `json:"format"`
	Shards       int               `json:"shards"`
	MaxFileBytes int64             `json:"maxFileBytes"`
	Dest         *beam.EncodedFunc `json:"dest,omitempty"`
	DestKind     int               `json:"destKind"`
	Pack         bool              `json:"pack,omitempty"`
	// OutputVersion is settings.OutputVersion, 1 or 2.
	OutputVersion int `json:"outputVersion"`

	format format.Format
	shards *shard.Sharder
	dest   reflectx.Func
	buf    []byte
	packs  pack.Packer[beam.EventTime]
	// received counts the bundle's records, for records_received.
	received int64
}

// newEncodeFn makes the Encode stage's DoFn from the settings, for a
// Destination function of shape kind (dest is nil for none); packed says
// whether records are packed per bundle (see packable).
func newEncodeFn(s settings, kind int, dest *beam.EncodedFunc, packed bool) *encodeFn {
	return &encodeFn{Format: s.Format, Shards: s.Shards, MaxFileBytes: s.MaxFileBytes, Dest: dest, DestKind: kind, Pack: packed,
		OutputVersion: s.OutputVersion}
}

func (f *encodeFn) Setup() error {
	var err error
	if f.format, err = format.Lookup(f.Format); err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	if f.shards, err = newSharder(f.OutputVersion, f.Shards); err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	if f.Dest != nil {
		kind, err := destinationShape(f.Dest.Fn.Type(), nil)
		if err != nil || kind != f.DestKind {
			return fmt.Errorf("s3once sink: the Destination function %s does not have the shape the pipeline was built with", f.Dest.Fn.Name())
		}
		f.dest = f.Dest.Fn
	}
	return nil
}

func (f *encodeFn) ProcessElement(ctx context.Context, w beam.Window, ts beam.EventTime, elem beam.T, emit func(beam.EventTime, []byte, []byte)) error {
	dest, err := f.destination(w, elem)
	if err != nil {
		return err
	}
	f.buf, err = f.format.Append(f.buf[:0], elem)
	if err != nil {
		return fmt.Errorf("s3once sink: destination %q: %w", dest, err)
	}
	if int64(len(f.buf)) > f.MaxFileBytes {
		return fmt.Errorf("s3once sink: destination %q: a record of %d bytes exceeds MaxFileBytes (%d); raise MaxFileBytes (and MaxBatchBytes)", dest, len(f.buf), f.MaxFileBytes)
	}
	key := shardKey(f.shards.Of(f.buf), dest)
	f.received++
	if !f.Pack {
		emit(ts, key, pack.Of(f.buf))
		return nil
	}
	f.packs.Add(key, ts, f.buf, emit)
	return nil
}

// FinishBundle emits the packs the bundle left open (they are in the global
// window, where Beam puts what FinishBundle emits), and counts the bundle's
// records once, not per record.
func (f *encodeFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, []byte, []byte)) {
	f.packs.Flush(emit)
	metricReceived.Inc(ctx, f.received)
	f.received = 0
}

func (f *encodeFn) destination(w beam.Window, elem beam.T) (string, error) {
	if f.dest == nil {
		return "", nil
	}
	var out []any
	switch f.DestKind {
	case destElem, destElemErr:
		out = f.dest.Call([]any{elem})
	case destWindowElem, destWindowElemErr:
		out = f.dest.Call([]any{w, elem})
	default:
		return "", fmt.Errorf("s3once sink: unknown destination shape %d", f.DestKind)
	}
	if len(out) == 2 && out[1] != nil {
		return "", fmt.Errorf("s3once sink: Destination: %w", out[1].(error))
	}
	dest := out[0].(string)
	if err := checkPath("destination", dest, MaxDestinationLen); err != nil {
		return "", fmt.Errorf("s3once sink: Destination returned a bad path: %w", err)
	}
	return dest, nil
}

// newSharder returns the shard hash of an output version (1 or 2) for
// shards shards, 1 to MaxShards (package internal/shard).
func newSharder(version, shards int) (*shard.Sharder, error) {
	if shards > MaxShards {
		return nil, fmt.Errorf("shard count %d is not in [1, %d]", shards, MaxShards)
	}
	return shard.New(version, shards)
}

// packable reports whether Encode packs col's records (see encodeFn): they
// are all in the global window, which FinishBundle emits into, and the
// trigger is the default one. Another trigger may count elements
// (AfterCount, alone or inside another), and packs would change what it
// counts, so with one every record stays an element of its own.
func packable(col beam.PCollection) bool {
	ws := col.WindowingStrategy()
	if ws == nil || ws.Fn == nil || ws.Fn.Kind != window.GlobalWindows {
		return false
	}
	switch ws.Trigger.(type) {
	case nil, *trigger.DefaultTrigger, trigger.DefaultTrigger:
		return true
	}
	return false
}
