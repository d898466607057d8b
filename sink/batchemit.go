package sink

import (
	"context"
	"errors"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
)

// How the Batch stage hands a batch to the runner: its emitter
// (batchEmitter), and the memo that the SDK's copies of an emitted batch
// share (batch.memo): the batch's records and its encoding, made once.

// batchMemo is an emitted batch's records and encoding.
type batchMemo struct {
	mu    sync.Mutex
	lines [][]byte // the records, until handedOver
	frame []byte   // their encoding, once made
	spent bool     // handedOver: lines and frame are gone
}

// emitted returns b as Batch hands it to the runner: its records move into
// a new memo that the copies the SDK makes of the element share, so that
// handedOver can let go of them for every copy at once.
func (b batch) emitted() batch {
	b.memo = &batchMemo{lines: b.Lines}
	b.Lines = nil
	return b
}

// handedOver lets go of an emitted batch's records and encoding, once the
// element has passed through the stage (the runner holds its bytes). The
// SDK keeps copies of the last element a DoFn saw in its invokers until the
// bundle ends, so without this a bundle of many groups would hold a batch
// after its reservation ended, and a worker running many such bundles many
// batches, outside the budget. Encoding a spent batch is an error, never an
// empty batch.
func (m *batchMemo) handedOver() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lines, m.frame, m.spent = nil, nil, true
}

// encode returns the memo's encoding of b's records, made once: every
// encoding after the first returns the first's bytes.
func (m *batchMemo) encode(b batch) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.frame == nil {
		if m.spent {
			return nil, errBatchSpent
		}
		if b.Lines == nil {
			b.Lines = m.lines
		}
		b.memo = nil
		out, err := encodeBatch(b)
		if err != nil {
			return nil, err
		}
		m.frame = out
	}
	return m.frame, nil
}

// errBatchSpent is returned for a batch used after Batch handed it over.
var errBatchSpent = errors.New("s3once sink: a batch was used after the runner took it (an SDK change?); its records are gone, so the bundle fails and is retried")

// batchEmitter is the Batch stage's emitter. The SDK's generated emitter
// (register.Emitter1) keeps the element it last emitted in a field that it
// reuses, so a DoFn instance that the runner keeps for later bundles holds
// its last batch (its records, up to MaxBatchBytes) after its
// reservation ended, and a worker with many instances holds many. This one
// passes each element on in a value of its own, and once the stage has
// taken it lets go of its records (handedOver): the restriction invokers
// of the splittable writer that follows keep their last element until the
// bundle ends, and a bundle of many groups would otherwise hold the last
// batch while it gathers the next.
type batchEmitter struct {
	n   exec.ElementProcessor
	est *sdf.WatermarkEstimator
	ctx context.Context
	pn  typex.PaneInfo
	ws  []typex.Window
	et  typex.EventTime
}

func newBatchEmitter(n exec.ElementProcessor) exec.ReusableEmitter { return &batchEmitter{n: n} }

func (e *batchEmitter) Init(ctx context.Context, pn typex.PaneInfo, ws []typex.Window, et typex.EventTime) error {
	e.ctx, e.pn, e.ws, e.et = ctx, pn, ws, et
	return nil
}

func (e *batchEmitter) AttachEstimator(est *sdf.WatermarkEstimator) { e.est = est }

func (e *batchEmitter) Value() any { return e.invoke }

func (e *batchEmitter) invoke(b batch) {
	if e.est != nil {
		(*e.est).(sdf.TimestampObservingEstimator).ObserveTimestamp(e.et.ToTime())
	}
	b = b.emitted()
	defer b.memo.handedOver()
	if err := e.n.ProcessElement(e.ctx, &exec.FullValue{Pane: e.pn, Windows: e.ws, Timestamp: e.et, Elm: b}); err != nil {
		// As the SDK's emitters do: the DoFn's invoker turns it into
		// the bundle's error.
		panic(err)
	}
}
