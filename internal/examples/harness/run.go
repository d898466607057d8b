package harness

import (
	"context"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/program"
	"github.com/s3once/s3once/sink"
)

// Outcome is what a finished run reports.
type Outcome struct {
	// Results are the committed files collected in this process (see
	// Results); empty when the runner ran the pipeline elsewhere.
	Results []sink.FileResult
	// Counters are the pipeline's counters, "namespace/name" -> value, as
	// far as the runner reports them.
	Counters map[string]int64
	// Elapsed is the wall time of the run, from submission to the end.
	Elapsed time.Duration
}

// Run runs p on the runner named by Beam's --runner flag (the embedded
// prism runner when unset) and waits for it to end. run is the ID Collect
// returned. The error is the runner's (see program.Format); the Outcome then
// holds what was committed before the failure, as far as this process saw
// it.
func Run(ctx context.Context, p *beam.Pipeline, run string) (Outcome, error) {
	o, err := program.Run(ctx, p)
	return Outcome{Results: Results(run), Elapsed: o.Elapsed, Counters: o.Counters}, err
}
