package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/format"
)

func TestAutoShardCount(t *testing.T) {
	for _, tc := range []struct {
		total, target int64
		bound, want   int
	}{
		{0, 1024, 1000, 1},
		{1, 1024, 1000, 1},
		{1024, 1024, 1000, 1},
		{1025, 1024, 1000, 2},
		{10 * 1024, 1024, 1000, 10},
		{10*1024 + 1, 1024, 1000, 11},
		{1 << 40, 1024, 1000, 1000},
		{1<<63 - 1, 1024, MaxShards, MaxShards},
		{5000, 1024, 3, 3},
	} {
		if got := autoShardCount(tc.total, tc.target, tc.bound); got != tc.want {
			t.Errorf("autoShardCount(%d, %d, %d) = %d, want %d", tc.total, tc.target, tc.bound, got, tc.want)
		}
	}
}

func TestCountedShardKey(t *testing.T) {
	for _, tc := range []struct {
		shard, count int
		dest         string
	}{{0, 1, ""}, {6, 7, "day=2024-06-01"}, {MaxShards - 1, MaxShards, "a/b"}} {
		shard, count, dest, err := parseCountedShardKey(countedShardKey(tc.shard, tc.count, tc.dest))
		if err != nil || shard != tc.shard || count != tc.count || dest != tc.dest {
			t.Errorf("round trip of (%d, %d, %q) = (%d, %d, %q, %v)", tc.shard, tc.count, tc.dest, shard, count, dest, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {3, 3}, {0, 0}, countedShardKey(0, MaxShards+1, "x"), {5}} {
		if _, _, _, err := parseCountedShardKey(bad); err == nil {
			t.Errorf("parseCountedShardKey(%q) took a malformed key", bad)
		}
	}
}

func TestAutoShardConfig(t *testing.T) {
	ok := testConfig("bucket", "out")
	ok.TargetFileBytes = 1 << 20
	st, err := ok.settings()
	if err != nil {
		t.Fatal(err)
	}
	if st.Shards != DefaultMaxAutoShards {
		t.Errorf("automatic sharding's bound defaults to %d, want %d", st.Shards, DefaultMaxAutoShards)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"negative", func(c *Config) { c.TargetFileBytes = -1 }, "TargetFileBytes -1 must not be negative"},
		{"tiny", func(c *Config) { c.TargetFileBytes = 100 }, "TargetFileBytes 100 is too small"},
		{"over files", func(c *Config) { c.MaxFileBytes = 1 << 19 }, "exceeds MaxFileBytes"},
		{"version 1", func(c *Config) { c.OutputVersion = 1 }, "needs output version 2"},
		{"bound", func(c *Config) { c.Shards = MaxShards + 1 }, "Shards 10001"},
	} {
		cfg := ok
		tc.edit(&cfg)
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestAutoShardRefusesTriggers: a window's byte count and its records
// must meet in one pane, so a trigger is refused while the pipeline is
// built, and fixed windows with the default trigger are taken.
func TestAutoShardRefusesTriggers(t *testing.T) {
	cfg := testConfig("bucket", "out")
	cfg.TargetFileBytes = 1 << 20
	_, s := beam.NewPipelineWithRoot()
	in := beam.Create(s, "x")
	triggered := beam.WindowInto(s, window.NewGlobalWindows(), in, beam.Trigger(trigger.Repeat(trigger.AfterCount(10))))
	if _, err := TryWrite(s, triggered, cfg); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "set Shards instead") {
		t.Errorf("TryWrite of triggered input with TargetFileBytes = %v; want it refused", err)
	}
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), in)
	if _, err := TryWrite(s.Scope("w"), windowed, cfg); err != nil {
		t.Errorf("TryWrite of fixed windows, default trigger: %v", err)
	}
}

// shardCountOf reads the shard count from a file's name (-of-NNNNN).
func shardCountOf(t *testing.T, r FileResult) int {
	t.Helper()
	var n int
	_, after, ok := strings.Cut(r.Key, fmt.Sprintf("-shard-%05d-of-", r.Shard))
	if !ok {
		t.Fatalf("%s: no shard count in the name", r.Key)
	}
	if _, err := fmt.Sscanf(after[:5], "%d", &n); err != nil {
		t.Fatalf("%s: %v", r.Key, err)
	}
	return n
}

// autoShardInput is a large destination (letter=a) and a small one
// (letter=b), and the record bytes of each as the text format writes them.
func autoShardInput(t *testing.T) (in []string, bytesOf map[string]int64) {
	text, err := format.Lookup("text")
	if err != nil {
		t.Fatal(err)
	}
	bytesOf = map[string]int64{}
	add := func(r string) {
		rec, err := text.Append(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, r)
		bytesOf[firstLetter(r)] += int64(len(rec))
	}
	for i := range 3000 {
		add(fmt.Sprintf("a%05d-%s", i, strings.Repeat("x", i%150)))
	}
	for i := range 5 {
		add(fmt.Sprintf("b%d", i))
	}
	return in, bytesOf
}

// autoShardRun writes in to prefix with automatic sharding; split > 1
// builds the input from that many Creates, flattened and reshuffled, so that
// the runner bundles it otherwise.
func autoShardRun(t *testing.T, bucket, prefix string, in []string, split int, tune func(*Config)) ([]FileResult, error) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	cfg := testConfig(bucket, prefix)
	cfg.Destination = firstLetter
	cfg.TargetFileBytes = 32 << 10
	if tune != nil {
		tune(&cfg)
	}
	col := beam.CreateList(s, in)
	if split > 1 {
		var parts []beam.PCollection
		for i := range split {
			parts = append(parts, beam.CreateList(s, in[i*len(in)/split:(i+1)*len(in)/split]))
		}
		col = beam.Reshuffle(s, beam.Flatten(s, parts...))
	}
	collect(t, s, Write(s, col, cfg))
	_, err := beam.Run(context.Background(), "prism", p)
	return results(t), err
}

// TestAutoShardsFollowData: with TargetFileBytes, the small destination
// gets one shard and one file, the large one ceil(bytes / target) shards,
// all used; another bundling of the same input writes the same bytes under
// the same names; a rerun keeps them; a rerun with fixed Shards or another
// target is refused before any commit.
func TestAutoShardsFollowData(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	in, bytesOf := autoShardInput(t)
	want := map[string]int{}
	for dest, n := range bytesOf {
		want[dest] = autoShardCount(n, 32<<10, DefaultMaxAutoShards)
	}
	if want["letter=b"] != 1 || want["letter=a"] < 8 {
		t.Fatalf("the input does not make a small and a large destination: %v", want)
	}

	res, err := autoShardRun(t, bucket, "one", in, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	shardsSeen := map[string]map[int]bool{}
	files := map[string]int{}
	var recs int64
	for _, r := range res {
		if shardCountOf(t, r) != want[r.Destination] {
			t.Errorf("%s is named for %d shards; destination %q holds %d bytes, want %d", r.Key, shardCountOf(t, r), r.Destination, bytesOf[r.Destination], want[r.Destination])
		}
		if shardsSeen[r.Destination] == nil {
			shardsSeen[r.Destination] = map[int]bool{}
		}
		shardsSeen[r.Destination][r.Shard] = true
		files[r.Destination]++
		recs += r.Records
	}
	if recs != int64(len(in)) {
		t.Errorf("the files hold %d records, want %d", recs, len(in))
	}
	if files["letter=b"] != 1 {
		t.Errorf("the small destination got %d files, want 1", files["letter=b"])
	}
	if n := len(shardsSeen["letter=a"]); n != want["letter=a"] {
		t.Errorf("the large destination's records fill %d of its %d shards", n, want["letter=a"])
	}

	if _, err := autoShardRun(t, bucket, "other", in, 7, nil); err != nil {
		t.Fatal(err)
	}
	first := relative(t, c, bucket, "one")
	if other := relative(t, c, bucket, "other"); !maps.EqualFunc(first, other, bytes.Equal) {
		t.Errorf("another bundling wrote other files: %d objects against %d", len(other), len(first))
	}

	if _, err := autoShardRun(t, bucket, "one", in, 3, nil); err != nil {
		t.Fatalf("a rerun: %v", err)
	}
	for _, tc := range []struct {
		name string
		tune func(*Config)
		says string
	}{
		{"fixed Shards", func(c *Config) { c.TargetFileBytes, c.Shards = 0, 4 }, "TargetFileBytes"},
		{"another target", func(c *Config) { c.TargetFileBytes = 64 << 10 }, "TargetFileBytes"},
	} {
		_, err := autoShardRun(t, bucket, "one", in, 1, tc.tune)
		if !errors.Is(errors.Unwrap(err), ErrSettingsChanged) && !strings.Contains(fmt.Sprint(err), "s3once:settings-changed") {
			t.Errorf("a rerun with %s: %v; want it refused as changed settings", tc.name, err)
		} else if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("a rerun with %s is refused without naming %s: %v", tc.name, tc.says, err)
		}
	}
	if !maps.EqualFunc(first, relative(t, c, bucket, "one"), bytes.Equal) {
		t.Error("the reruns changed the folder")
	}
	checkClean(t, c, bucket)
}

// TestAutoShardsPerWindow: each window's count follows its own bytes, on
// windowed input with the default trigger.
func TestAutoShardsPerWindow(t *testing.T) {
	bucket := srv.Bucket(t)
	jsonl, err := format.Lookup("jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var evs []event
	want := map[int64]int64{} // window start (s) -> record bytes
	for i := range 2000 {
		win := int64(0)
		if i%10 == 0 {
			win = 60 // the second window gets a tenth of the records
		}
		e := event{Name: fmt.Sprintf("w%05d-%s", i, strings.Repeat("y", i%100)), At: (win + int64(i%50)) * 1000}
		evs = append(evs, e)
		rec, err := jsonl.Append(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		want[win] += int64(len(rec))
	}
	p, s := beam.NewPipelineWithRoot()
	stamped := beam.ParDo(s, stampEvent, beam.CreateList(s, evs))
	cfg := testConfig(bucket, "win")
	cfg.Format = "jsonl"
	cfg.TargetFileBytes = 16 << 10
	collect(t, s, Write(s, beam.WindowInto(s, window.NewFixedWindows(time.Minute), stamped), cfg))
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range results(t) {
		if c, ok := counts[r.Window]; ok && c != shardCountOf(t, r) {
			t.Errorf("window %s has files named for %d and %d shards", r.Window, c, shardCountOf(t, r))
		}
		counts[r.Window] = shardCountOf(t, r)
	}
	if len(counts) != 2 {
		t.Fatalf("files in %d windows, want 2: %v", len(counts), counts)
	}
	for start, n := range want {
		win := time.Unix(start, 0).UTC().Format("20060102T150405Z") + "-" + time.Unix(start+60, 0).UTC().Format("20060102T150405Z")
		if got, w := counts[win], autoShardCount(n, 16<<10, DefaultMaxAutoShards); got != w {
			t.Errorf("window %s: %d shards, want %d for its %d bytes (counts %v)", win, got, w, n, counts)
		}
	}
}
