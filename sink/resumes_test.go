package sink

import (
	"context"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// TestSelfCheckpointResumesAreNotRecoveries: a run in which nothing fails
// but the writer self-checkpoints many times counts its resumes as
// self-checkpoint resumes, and no recovery and no recovered tail.
func TestSelfCheckpointResumesAreNotRecoveries(t *testing.T) {
	bucket := srv.Bucket(t)
	p, s := beam.NewPipelineWithRoot()
	cfg := testConfig(bucket, "out")
	cfg.Shards = 2
	cfg.CheckpointBytes = MinCheckpointBytes
	Write(s, beam.CreateList(s, words(4000, 5)), cfg)
	pr, err := beam.Run(context.Background(), "prism", p)
	if err != nil {
		t.Fatal(err)
	}
	m := counters(pr)
	if m["persists"] == 0 || m["self_checkpoint_resumes"] == 0 {
		t.Fatalf("counters %v: want self-checkpoints and their resumes", m)
	}
	if m["recoveries"] != 0 || m["tails_recovered"] != 0 {
		t.Fatalf("a run without failures counted %d recoveries and %d recovered tails (%d self-checkpoint resumes)", m["recoveries"], m["tails_recovered"], m["self_checkpoint_resumes"])
	}
}
