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

// The set of handed-over tokens forgets the oldest token to make room, never
// a recent one: a run that leaves many residuals to other processes (or a
// test binary that leaves them to failed bundles) still recognizes its own
// self-checkpoints.
func TestHandedOverForgetsOldestFirst(t *testing.T) {
	s := newTokenSet(4)
	id := func(i int) tokenID { return tokenID{upload: "u", seq: uint64(i)} }
	for i := range 6 {
		s.add(id(i))
	}
	for i, want := range []bool{false, false, true, true, true, true} {
		if got := s.take(id(i)); got != want {
			t.Errorf("token %d after 6 of at most 4: in the set %v, want %v", i, got, want)
		}
		if s.take(id(i)) {
			t.Errorf("token %d taken back twice", i)
		}
	}
	// Taken-back tokens free nothing early and break nothing: the set goes
	// on forgetting the oldest of those it still holds.
	for i := 6; i < 14; i++ {
		s.add(id(i))
	}
	for i := 6; i < 14; i++ {
		if got, want := s.take(id(i)), i >= 10; got != want {
			t.Errorf("token %d after 8 more: in the set %v, want %v", i, got, want)
		}
	}
}
