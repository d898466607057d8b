package sink

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"

	"github.com/s3once/s3once/internal/s3test"
)

// barrierRun writes in to prefix on prism with settings that make many
// files, and returns the pipeline's error and counters.
func barrierRun(t *testing.T, bucket, prefix string, in []string) (map[string]int64, error) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	cfg := testConfig(bucket, prefix)
	cfg.Destination = firstLetter
	cfg.Shards = 2
	cfg.MaxFileRecords = 200
	cfg.CheckpointBytes = MinCheckpointBytes
	Write(s, beam.CreateList(s, in), cfg)
	pr, err := beam.Run(context.Background(), "prism", p)
	return counters(pr), err
}

// TestChangedRerunCommitsNothing: a rerun into a folder whose files came
// from other input fails before it commits any file, leaves the folder
// exactly as the first run made it, and leaves no upload or side object
// behind; the failure says what happened and what to do. A rerun with the
// first run's input goes through and keeps every file.
func TestChangedRerunCommitsNothing(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	first := words(2000, 1)
	if _, err := barrierRun(t, bucket, "out", first); err != nil {
		t.Fatal(err)
	}
	before := relative(t, c, bucket, "out")
	if len(before) < 10 {
		t.Fatalf("the first run wrote %d files; want many", len(before))
	}

	// More records, other records: keys the first run took get other bytes,
	// and new keys (more files per shard) are free.
	_, err := barrierRun(t, bucket, "out", words(3000, 2))
	if err == nil {
		t.Fatal("a rerun with changed input succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"other bytes", "nothing of this run was committed", "fresh Prefix"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q: %s", want, msg)
		}
	}
	for _, banned := range []string{"another run or tool", "inspect both", "commit after recovery"} {
		if strings.Contains(msg, banned) {
			t.Errorf("the failure says %q: %s", banned, msg)
		}
	}
	after := relative(t, c, bucket, "out")
	if !maps.EqualFunc(before, after, bytes.Equal) {
		added := slices.Sorted(maps.Keys(after))
		t.Errorf("the folder changed: %d files before, %d after (%v)", len(before), len(after), added)
	}
	if ups := s3test.Uploads(t, c, bucket); len(ups) > 0 {
		t.Errorf("%d uploads left open: %v", len(ups), ups)
	}
	checkClean(t, c, bucket)

	// The same input again: every key holds the file's bytes.
	m, err := barrierRun(t, bucket, "out", first)
	if err != nil {
		t.Fatalf("a rerun with the same input: %v", err)
	}
	if got := m["barrier_kept"]; got != int64(len(before)) {
		t.Errorf("the barrier kept %d files; want all %d", got, len(before))
	}
	if !maps.EqualFunc(before, relative(t, c, bucket, "out"), bytes.Equal) {
		t.Error("a rerun with the same input changed the folder")
	}
	checkClean(t, c, bucket)
}

// TestBarrierApplies: the barrier is used for bounded input in the global
// window unless files are committed at bundle finalization.
func TestBarrierApplies(t *testing.T) {
	st, err := testConfig("bucket-name", "out").settings()
	if err != nil {
		t.Fatal(err)
	}
	_, s := beam.NewPipelineWithRoot()
	bounded := beam.CreateList(s, []string{"a"})
	if !barrierApplies(st, bounded) {
		t.Error("no barrier for bounded, global-window input")
	}
	windowed := beam.WindowInto(s, window.NewFixedWindows(60e9), bounded)
	if barrierApplies(st, windowed) {
		t.Error("a barrier for windowed input")
	}
	always := st
	always.FinalizeCommit = FinalizeAlways
	if barrierApplies(always, bounded) {
		t.Error("a barrier although files are committed at bundle finalization")
	}
	if b, known := isBounded(bounded); !known || !b {
		t.Errorf("isBounded(CreateList) = %v, %v", b, known)
	}
}

// TestTwoSinksOnOneFolderRefused: two Writes of one pipeline whose folders
// overlap are refused while the pipeline is built, with an error that says
// which folders clash, so nothing is ever written; folders apart are fine,
// and so is the same folder in two pipelines built in one process.
func TestTwoSinksOnOneFolderRefused(t *testing.T) {
	bucket := srv.Bucket(t)
	cfg := func(prefix, staging string) Config {
		c := testConfig(bucket, prefix)
		c.StagingPrefix = staging
		return c
	}
	for _, tc := range []struct {
		name   string
		a, b   Config
		refuse string
	}{
		{"same prefix", cfg("events", ""), cfg("events/", ""), `both write Prefix "events"`},
		{"nested prefix", cfg("events", ""), cfg("events/eu", ""), "one folder holds the other"},
		{"bucket root", cfg("", ""), cfg("events", ""), "one folder holds the other"},
		{"staging in the other's output", cfg("events", ""), cfg("audit", "events/tmp"), "lies in the output folder"},
		{"output holds the other's staging", cfg("audit", "events/tmp"), cfg("events", ""), "holds the StagingPrefix"},
		{"sibling prefixes", cfg("events", ""), cfg("events-v2", ""), ""},
		{"shared default staging", cfg("events", ""), cfg("audit", ""), ""},
		{"staging under own output", cfg("events", "events/_tmp"), cfg("audit", ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			in := beam.CreateList(s, []string{"x"})
			if _, err := TryWrite(s, in, tc.a); err != nil {
				t.Fatalf("first Write: %v", err)
			}
			_, err := TryWrite(s, in, tc.b)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("second Write refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrFoldersOverlap) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("second Write: %v; want ErrFoldersOverlap and ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tc.refuse) {
				t.Fatalf("the refusal does not say %q: %v", tc.refuse, err)
			}
			assertPanics(t, tc.refuse, func() { Write(s, in, tc.b) })
		})
	}
	// The same folder in two pipelines: tests and programs that build one
	// pipeline after another do this.
	for range 2 {
		_, s := beam.NewPipelineWithRoot()
		if _, err := TryWrite(s, beam.CreateList(s, []string{"x"}), cfg("events", "")); err != nil {
			t.Fatalf("a second pipeline writing the same folder: %v", err)
		}
	}
	if keys := s3test.Keys(t, testClient(), bucket, ""); len(keys) > 0 {
		t.Fatalf("the bucket holds %v", keys)
	}
}
