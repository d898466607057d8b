package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
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
	// Its partitions are complete (their manifests exist): the barrier
	// names the files the rerun would add to them.
	for _, want := range []string{"is complete", "this run would add", "nothing of this run was committed", "fresh Prefix"} {
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
	if got, want := m["barrier_kept"], fileCount(before); got != want {
		t.Errorf("the barrier kept %d files; want all %d", got, want)
	}
	if !maps.EqualFunc(before, relative(t, c, bucket, "out"), bytes.Equal) {
		t.Error("a rerun with the same input changed the folder")
	}
	checkClean(t, c, bucket)
}

// TestBarrierApplies: the barrier is used for bounded input, in the global
// window or any other, unless files are committed at bundle finalization;
// the reason given says which guarantee applies.
func TestBarrierApplies(t *testing.T) {
	st, err := testConfig("bucket-name", "out").settings()
	if err != nil {
		t.Fatal(err)
	}
	_, s := beam.NewPipelineWithRoot()
	bounded := beam.CreateList(s, []string{"a"})
	if ok, why := barrierApplies(st, s, bounded); !ok || !strings.Contains(why, "bounded") {
		t.Errorf("bounded, global-window input: %v, %q", ok, why)
	}
	for name, ws := range map[string]*window.Fn{
		"fixed":    window.NewFixedWindows(time.Minute),
		"sliding":  window.NewSlidingWindows(time.Minute, 3*time.Minute),
		"sessions": window.NewSessions(time.Minute),
	} {
		if ok, why := barrierApplies(st, s, beam.WindowInto(s, ws, bounded)); !ok {
			t.Errorf("no barrier for bounded input in %s windows: %s", name, why)
		}
	}
	always := st
	always.FinalizeCommit = FinalizeAlways
	if ok, why := barrierApplies(always, s, bounded); ok || !strings.Contains(why, "bundle finalization") {
		t.Errorf("a barrier although files are committed at bundle finalization: %v, %q", ok, why)
	}
	if b, known := isBounded(bounded); !known || !b {
		t.Errorf("isBounded(CreateList) = %v, %v", b, known)
	}
	ts := teststream.NewConfig()
	if err := ts.AddElements(0, "a"); err != nil {
		t.Fatal(err)
	}
	if ok, why := barrierApplies(st, s, teststream.Create(s, ts)); ok || !strings.Contains(why, "unbounded") {
		t.Errorf("a barrier for unbounded input: %v, %q", ok, why)
	}
}

// windowedRun writes events in fixed one-minute windows to prefix on prism,
// with a manifest marker per window, collecting the FileResults and the
// window each arrives in.
func windowedRun(t *testing.T, bucket, prefix string, in []event) (map[string]int64, error) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	stamped := beam.ParDo(s, stampEvent, beam.CreateList(s, in))
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), stamped)
	cfg := testConfig(bucket, prefix)
	cfg.Format = "jsonl"
	cfg.Shards = 2
	cfg.MaxFileRecords = 100
	cfg.CheckpointBytes = MinCheckpointBytes
	cfg.CompletionMarker = MarkerManifest
	files := Write(s, windowed, cfg)
	resetWindows(t)
	beam.ParDo0(s, &windowOfFn{ID: t.Name()}, files)
	pr, err := beam.Run(context.Background(), "prism", p)
	return counters(pr), err
}

// minuteEvents makes n events over three minutes of event time; seed picks
// their names.
func minuteEvents(n int, seed uint64) []event {
	base := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	r := rand.New(rand.NewPCG(seed, 5))
	out := make([]event, n)
	for i := range out {
		out[i] = event{At: base + r.Int64N(3*60_000), Name: fmt.Sprintf("e%d-%06d", seed, i)}
	}
	return out
}

// TestChangedRerunCommitsNothingWindowed: the run-wide barrier holds for
// bounded input in fixed windows too. A rerun whose input changed fails
// before any file of any window is committed, writes no marker, and leaves
// the folder byte for byte as the first run made it, with no upload or side
// object behind; a rerun with the same input keeps every file. Under the
// barrier the FileResults come out in the global window, each naming its
// own window, and every window still gets its manifest, listing exactly the
// window's files.
func TestChangedRerunCommitsNothingWindowed(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	first := minuteEvents(1500, 1)
	if _, err := windowedRun(t, bucket, "win", first); err != nil {
		t.Fatal(err)
	}
	before := relative(t, c, bucket, "win")
	files := map[string][]string{} // window -> its files
	for k := range before {
		if !ownkeys.IsFileName("", k) {
			continue
		}
		w, _, ok := strings.Cut(k, "-pane-")
		if !ok {
			t.Fatalf("file %s names no pane", k)
		}
		files[w] = append(files[w], k)
	}
	if len(files) != 3 {
		t.Fatalf("the first run wrote files in windows %v; want 3", slices.Sorted(maps.Keys(files)))
	}
	for w, ks := range files {
		if len(ks) < 4 {
			t.Errorf("window %s has %d files; want several", w, len(ks))
		}
		marker, ok := before[ownkeys.MarkerKey("", w, 0)]
		if !ok {
			t.Errorf("no marker for window %s", w)
			continue
		}
		var listed []string
		for _, line := range strings.Split(strings.TrimSpace(string(marker)), "\n") {
			var r FileResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("marker of %s: %v", w, err)
			}
			listed = append(listed, strings.TrimPrefix(r.Key, "win/"))
		}
		slices.Sort(ks)
		if !slices.Equal(listed, ks) {
			t.Errorf("window %s: the marker lists %v, the files are %v", w, listed, ks)
		}
	}
	wins := windowsSeen(t)
	if len(wins) == 0 {
		t.Fatal("no FileResult reached the pipeline")
	}
	for key, w := range wins {
		if w != "global" {
			t.Errorf("the FileResult of %s came out in window %s; want the global window", key, w)
		}
	}

	// Other events, more of them: keys of the first run would get other
	// bytes, in every window.
	_, err := windowedRun(t, bucket, "win", minuteEvents(2500, 2))
	if err == nil {
		t.Fatal("a rerun with changed input succeeded")
	}
	// Its partitions are complete (their manifests exist): the barrier
	// names the files the rerun would add to them.
	for _, want := range []string{"is complete", "this run would add", "nothing of this run was committed", "fresh Prefix"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the failure does not say %q: %v", want, err)
		}
	}
	after := relative(t, c, bucket, "win")
	if !maps.EqualFunc(before, after, bytes.Equal) {
		var changed []string
		for k, v := range after {
			if b, ok := before[k]; !ok || !bytes.Equal(b, v) {
				changed = append(changed, k)
			}
		}
		slices.Sort(changed)
		t.Errorf("the folder changed: %d objects before, %d after; new or changed: %v", len(before), len(after), changed)
	}
	if ups := s3test.Uploads(t, c, bucket); len(ups) > 0 {
		t.Errorf("%d uploads left open: %v", len(ups), ups)
	}
	checkClean(t, c, bucket)

	m, err := windowedRun(t, bucket, "win", first)
	if err != nil {
		t.Fatalf("a rerun with the same input: %v", err)
	}
	if got, want := m["barrier_kept"], fileCount(before); got != want {
		t.Errorf("the barrier kept %d files; want all %d", got, want)
	}
	if !maps.EqualFunc(before, relative(t, c, bucket, "win"), bytes.Equal) {
		t.Error("a rerun with the same input changed the folder")
	}
	checkClean(t, c, bucket)
}

// fileCount counts the output files among a folder's objects (keys
// relative to the folder), leaving out markers beside them.
func fileCount(objs map[string][]byte) int64 {
	n := int64(0)
	for k := range objs {
		if ownkeys.IsFileName("", k) {
			n++
		}
	}
	return n
}

func init() {
	register.DoFn2x0[beam.Window, FileResult](&windowOfFn{})
}

// windowOfFn records the window each FileResult arrives in, by test name
// and key ("global" or the window's bounds).
type windowOfFn struct{ ID string }

var (
	windowsMu sync.Mutex
	windows   = map[string]map[string]string{}
)

func (f *windowOfFn) ProcessElement(w beam.Window, r FileResult) {
	name, err := windowName(w)
	if err != nil {
		name = err.Error()
	}
	windowsMu.Lock()
	defer windowsMu.Unlock()
	if windows[f.ID] == nil {
		windows[f.ID] = map[string]string{}
	}
	windows[f.ID][r.Key] = name
}

func resetWindows(t *testing.T) {
	windowsMu.Lock()
	defer windowsMu.Unlock()
	delete(windows, t.Name())
}

func windowsSeen(t *testing.T) map[string]string {
	windowsMu.Lock()
	defer windowsMu.Unlock()
	return maps.Clone(windows[t.Name()])
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
