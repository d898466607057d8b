// Package events generates timestamped events and builds the streaming
// example pipeline: events in fixed event-time windows, written by
// sink.Write as files per window and per event kind.
//
// Two sources feed it. Generated (the default) makes a seeded, bounded set of
// events whose timestamps spread over a span of event time: the windows, the
// files and their bytes are the same on every run. Live makes events as time
// passes, from Beam's periodic impulse (an unbounded source), stamped with the
// time they were made: windows close, and their files are committed, while
// the pipeline runs.
package events

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/s3once/s3once/internal/examples/sinkdefaults"
	"github.com/s3once/s3once/sink"
)

func init() {
	register.DoFn3x1[context.Context, int, func(beam.EventTime, Event), error](&generateFn{})
	register.DoFn4x1[context.Context, beam.EventTime, []byte, func(beam.EventTime, Event), error](&liveFn{})
	register.Emitter2[beam.EventTime, Event]()
	register.Function1x1(Destination)
}

// Event is one user action: one JSON line in the output.
type Event struct {
	ID    string    `json:"id"`
	Time  time.Time `json:"time"`
	User  string    `json:"user"`
	Kind  string    `json:"kind"`
	Item  string    `json:"item"`
	Value int64     `json:"value"`
}

// Destination is the folder an event goes to: "kind=<kind>".
func Destination(e Event) string { return "kind=" + e.Kind }

var kinds = []string{"view", "click", "cart", "purchase"}

// Options describe the events.
type Options struct {
	// Records is the number of generated events. Required unless Live.
	Records int
	// Seed picks the events: equal seeds give equal events.
	Seed uint64
	// Start is the event time of the first window (generated events only);
	// zero means 2024-06-01T00:00:00Z.
	Start time.Time
	// Span is how much event time generated events cover. Default 1h.
	Span time.Duration
	// Window is the fixed window size. Default 10m (10s when Live).
	Window time.Duration
	// Live, when positive, makes events as time passes for this long
	// instead of generating Records of them.
	Live time.Duration
	// Tick is how often Live makes a burst of PerTick events. Default 1s.
	Tick    time.Duration
	PerTick int
}

// Check fills in defaults and reports every problem of o at once.
func (o Options) Check() (Options, error) {
	var problems []string
	if o.Start.IsZero() {
		o.Start = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.Span == 0 {
		o.Span = time.Hour
	}
	if o.Window == 0 {
		o.Window = 10 * time.Minute
		if o.Live > 0 {
			o.Window = 10 * time.Second
		}
	}
	if o.Tick == 0 {
		o.Tick = time.Second
	}
	if o.PerTick == 0 {
		o.PerTick = 500
	}
	switch {
	case o.Live < 0:
		problems = append(problems, fmt.Sprintf("live %v must not be negative", o.Live))
	case o.Live > 0:
		if o.Tick < 10*time.Millisecond || o.Tick > o.Live {
			problems = append(problems, fmt.Sprintf("tick %v must be in [10ms, live %v]", o.Tick, o.Live))
		}
		if o.PerTick < 1 || o.PerTick > 1_000_000 {
			problems = append(problems, fmt.Sprintf("events per tick %d must be in [1, 1000000]", o.PerTick))
		}
	default:
		if o.Records <= 0 || o.Records > 100_000_000 {
			problems = append(problems, fmt.Sprintf("records %d must be in [1, 100000000]", o.Records))
		}
	}
	if o.Span <= 0 {
		problems = append(problems, fmt.Sprintf("span %v must be positive", o.Span))
	}
	if o.Window < time.Second || o.Window > 24*time.Hour {
		problems = append(problems, fmt.Sprintf("window %v must be in [1s, 24h]", o.Window))
	}
	if len(problems) > 0 {
		return o, fmt.Errorf("events: %s", strings.Join(problems, "; "))
	}
	return o, nil
}

const chunk = 2000

// Generate adds the events to the pipeline, timestamped and in fixed
// windows: a PCollection<Event>.
func Generate(s beam.Scope, o Options) (beam.PCollection, error) {
	o, err := o.Check()
	if err != nil {
		return beam.PCollection{}, err
	}
	s = s.Scope("events.Generate")
	var evs beam.PCollection
	if o.Live > 0 {
		now := time.Now()
		ticks := periodic.Impulse(s, now, now.Add(o.Live), o.Tick, false)
		evs = beam.ParDo(s, &liveFn{Seed: o.Seed, PerTick: o.PerTick, TickMillis: o.Tick.Milliseconds()}, ticks)
	} else {
		n := (o.Records + chunk - 1) / chunk
		starts := make([]int, n)
		for i := range starts {
			starts[i] = i * chunk
		}
		fn := &generateFn{Records: o.Records, Seed: o.Seed, StartMillis: o.Start.UnixMilli(), SpanMillis: o.Span.Milliseconds()}
		evs = beam.ParDo(s, fn, beam.CreateList(s, starts))
	}
	return beam.WindowInto(s, window.NewFixedWindows(o.Window), evs), nil
}

// Write builds the streaming example: the events, in fixed windows, written
// by sink.Write with one destination per event kind. Each window (and each
// pane of it) gets its own files.
func Write(s beam.Scope, o Options, cfg sink.Config) (beam.PCollection, error) {
	evs, err := Generate(s, o)
	if err != nil {
		return beam.PCollection{}, err
	}
	return sinkdefaults.Write(s, evs, cfg, Destination)
}

// Configure sets what Write sets on cfg: the example's default format
// ("jsonl") and its Destination. A program that runs sink.Preflight
// before Write calls it first, so that the preflight checks the settings
// the files are written with.
func Configure(cfg *sink.Config) { sinkdefaults.Configure(cfg, Destination) }

// generateFn makes events [start, start+chunk), timestamped within the span.
type generateFn struct {
	Records     int    `json:"records"`
	Seed        uint64 `json:"seed"`
	StartMillis int64  `json:"startMillis"`
	SpanMillis  int64  `json:"spanMillis"`
}

func (f *generateFn) ProcessElement(ctx context.Context, start int, emit func(beam.EventTime, Event)) error {
	if start < 0 || start >= f.Records {
		return fmt.Errorf("events: chunk start %d outside [0, %d)", start, f.Records)
	}
	for i := start; i < min(start+chunk, f.Records); i++ {
		r := rand.New(rand.NewPCG(f.Seed, uint64(i)))
		at := time.UnixMilli(f.StartMillis + r.Int64N(f.SpanMillis)).UTC()
		e := event(r, fmt.Sprintf("ev-%09d", i), at)
		emit(mtime.FromTime(at), e)
	}
	return nil
}

// liveFn makes a burst of events for each tick of the periodic impulse,
// stamped within the tick.
type liveFn struct {
	Seed       uint64 `json:"seed"`
	PerTick    int    `json:"perTick"`
	TickMillis int64  `json:"tickMillis"`
}

func (f *liveFn) ProcessElement(ctx context.Context, t beam.EventTime, _ []byte, emit func(beam.EventTime, Event)) error {
	base := t.ToTime().UTC()
	for i := 0; i < f.PerTick; i++ {
		r := rand.New(rand.NewPCG(f.Seed^uint64(base.UnixMilli()), uint64(i)))
		at := base.Add(time.Duration(r.Int64N(max(f.TickMillis, 1))) * time.Millisecond)
		e := event(r, fmt.Sprintf("ev-%d-%06d", base.UnixMilli(), i), at)
		emit(mtime.FromTime(at), e)
	}
	return nil
}

func event(r *rand.Rand, id string, at time.Time) Event {
	k := kinds[r.IntN(len(kinds))]
	var v int64
	if k == "purchase" {
		v = 100 + r.Int64N(50_000) // cents
	}
	return Event{
		ID:    id,
		Time:  at,
		User:  fmt.Sprintf("user-%05d", r.IntN(20_000)),
		Kind:  k,
		Item:  fmt.Sprintf("sku-%04d", r.IntN(5_000)),
		Value: v,
	}
}
