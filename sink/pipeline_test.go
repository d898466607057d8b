package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3test"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
)

func init() {
	register.Function1x1(firstLetter)
	register.Function2x0(stampEvent)
	register.Emitter2[beam.EventTime, event]()
	beam.RegisterType(reflect.TypeFor[event]())
}

func firstLetter(s string) string { return "letter=" + s[:1] }

// event is a record with its event time, in milliseconds.
type event struct {
	At   int64  `json:"at"`
	Name string `json:"name"`
}

// stampEvent gives an event its event time.
func stampEvent(e event, emit func(beam.EventTime, event)) {
	emit(mtime.FromMilliseconds(e.At), e)
}

func words(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 11))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%c%c-%06d-%s", 'a'+r.IntN(3), 'a'+r.IntN(26), i, strings.Repeat("z", r.IntN(30)))
	}
	return out
}

// TestDeterminism writes the same input, shuffled two ways, twice: names and
// bytes must be identical, compressed or not.
func TestDeterminism(t *testing.T) {
	for _, codec := range []string{"none", "gzip"} {
		t.Run(codec, func(t *testing.T) {
			bucket := srv.Bucket(t)
			in := words(10_000, 3)
			for run := 0; run < 2; run++ {
				xs := append([]string(nil), in...)
				rand.New(rand.NewPCG(uint64(run), 0)).Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
				p, s := beam.NewPipelineWithRoot()
				cfg := testConfig(bucket, fmt.Sprintf("run%d", run))
				cfg.Compression = codec
				cfg.Destination = firstLetter
				cfg.Shards = 3
				cfg.MaxFileRecords = 500
				cfg.CheckpointBytes = 16 << 10
				Write(s, beam.CreateList(s, xs), cfg)
				if err := ptest.Run(p); err != nil {
					t.Fatal(err)
				}
			}
			c := testClient()
			a, b := relative(t, c, bucket, "run0"), relative(t, c, bucket, "run1")
			if len(a) < 9 || len(a) != len(b) {
				t.Fatalf("runs wrote %d and %d files", len(a), len(b))
			}
			var got []string
			for k, v := range a {
				w, ok := b[k]
				if !ok {
					t.Fatalf("%s only in the first run", k)
				}
				if !bytes.Equal(v, w) {
					t.Fatalf("%s differs between runs", k)
				}
				got = append(got, lines(t, k, decompress(t, k, v))...)
			}
			sameMultiset(t, got, in)
			checkClean(t, c, bucket)
		})
	}
}

// TestWindowed writes event-timed records in fixed one-minute windows: each
// window gets its own files, named after it, rolled by size.
func TestWindowed(t *testing.T) {
	bucket := srv.Bucket(t)
	base := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	var in []event
	for i := 0; i < 6000; i++ {
		in = append(in, event{At: base + int64(i)*30, Name: fmt.Sprintf("e%05d", i)}) // 3 minutes
	}
	p, s := beam.NewPipelineWithRoot()
	stamped := beam.ParDo(s, stampEvent, beam.CreateList(s, in))
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), stamped)
	cfg := testConfig(bucket, "events")
	cfg.Format = "jsonl"
	cfg.Compression = "zstd"
	cfg.Shards = 2
	cfg.MaxFileBytes = 16 << 10
	cfg.CheckpointBytes = 8 << 10
	written, windows := WriteWindows(s, windowed, cfg)
	collect(t, s, written)
	collectWindows(t, s, windows)
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	c := testClient()
	objs := s3test.Objects(t, c, bucket, "events/")
	name := regexp.MustCompile(`^events/(20240601T10(\d\d)00Z-20240601T10(\d\d)00Z)-pane-0-shard-0000[01]-of-00002-file-\d{5}\.jsonl\.zst$`)
	perWindow := map[string]int{}
	var got []string
	for k, v := range objs {
		m := name.FindStringSubmatch(k)
		if m == nil {
			t.Fatalf("unexpected object %s", k)
		}
		data := decompress(t, k, v)
		if len(data) > 16<<10 {
			t.Errorf("%s holds %d record bytes, more than MaxFileBytes", k, len(data))
		}
		for _, l := range lines(t, k, data) {
			var e event
			if err := jsonUnmarshal(l, &e); err != nil {
				t.Fatal(err)
			}
			start := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration((e.At-base)/60000) * time.Minute)
			if want := windowTime(mtime.FromTime(start)); !strings.HasPrefix(m[1], want) {
				t.Errorf("event at %d in window %s", e.At, m[1])
			}
			got = append(got, l)
		}
		perWindow[m[1]]++
	}
	if len(perWindow) != 3 {
		t.Errorf("files per window: %v; want 3 windows", perWindow)
	}
	for w, n := range perWindow {
		if n < 3 {
			t.Errorf("window %s has %d files; want them rolled by size", w, n)
		}
	}
	var want []string
	for _, e := range in {
		want = append(want, jsonString(e))
	}
	sameMultiset(t, got, want)
	res := results(t)
	if len(res) != len(objs) {
		t.Errorf("%d results for %d files", len(res), len(objs))
	}
	byWindow := map[string][]string{}
	for _, r := range res {
		if !strings.Contains(r.Key, r.Window+"-pane-") {
			t.Errorf("result %+v: window not in key", r)
		}
		byWindow[r.Window] = append(byWindow[r.Window], r.Key)
	}
	// WriteWindows emits each window once, after the run, with its files.
	for _, keys := range byWindow {
		slices.Sort(keys)
	}
	checkWindows(t, byWindow)
	t.Logf("files per window %v; metrics %v", perWindow, counters(pr))
	checkClean(t, c, bucket)
}

// TestPanes feeds a TestStream through a window that fires early every 50
// records (discarding): each pane gets its own files, named after the pane,
// and together they hold every record once.
func TestPanes(t *testing.T) {
	bucket := srv.Bucket(t)
	ts := teststream.NewConfig()
	var in []string
	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for step := 0; step < 4; step++ {
		var batch []string
		for i := 0; i < 50; i++ {
			batch = append(batch, fmt.Sprintf("rec-%d-%03d", step, i))
		}
		in = append(in, batch...)
		if err := ts.AddElementList(base+int64(step)*1000, batch); err != nil {
			t.Fatal(err)
		}
		if err := ts.AdvanceWatermark(base + int64(step)*1000 + 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.AdvanceWatermarkToInfinity(); err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	col := teststream.Create(s, ts)
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Hour), col,
		beam.Trigger(trigger.AfterEndOfWindow().EarlyFiring(trigger.Repeat(trigger.AfterCount(50)))),
		beam.PanesDiscard())
	cfg := testConfig(bucket, "panes")
	cfg.Shards = 1
	collect(t, s, Write(s, windowed, cfg))
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	c := testClient()
	objs := s3test.Objects(t, c, bucket, "panes/")
	name := regexp.MustCompile(`^panes/20240601T000000Z-20240601T010000Z-pane-(\d+)-shard-00000-of-00001-file-00000\.txt$`)
	panes := map[string]bool{}
	var got []string
	for k, v := range objs {
		m := name.FindStringSubmatch(k)
		if m == nil {
			t.Fatalf("unexpected object %s", k)
		}
		panes[m[1]] = true
		got = append(got, lines(t, k, v)...)
	}
	sameMultiset(t, got, in)
	if len(panes) < 2 {
		t.Errorf("panes %v; want several", panes)
	}
	t.Logf("%d files over panes %v", len(objs), panes)
	checkClean(t, c, bucket)
}

// TestBadConfig checks that configurations that cannot work fail while the
// pipeline is built, with a message that says why.
func TestBadConfig(t *testing.T) {
	ok := testConfig("bucket", "out")
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"empty bucket", func(c *Config) { c.Bucket = "" }, "Bucket is required"},
		{"bucket path", func(c *Config) { c.Bucket = "a/b" }, "not a path"},
		{"leading slash", func(c *Config) { c.Prefix = "/out" }, "must not start with '/'"},
		{"empty segment", func(c *Config) { c.Prefix = "a//b" }, "empty segment"},
		{"dot dot", func(c *Config) { c.Prefix = "a/../b" }, `".." segment`},
		{"staging under prefix", func(c *Config) { c.Prefix = "out"; c.StagingPrefix = "out/staging/" }, "readers would see side objects"},
		{"prefix under staging", func(c *Config) { c.Prefix = ".s3once/staging/x" }, "lies under StagingPrefix"},
		{"root prefix visible staging", func(c *Config) { c.Prefix = ""; c.StagingPrefix = "staging/" }, "readers would see side objects"},
		{"unknown format", func(c *Config) { c.Format = "avro" }, `unknown Format "avro"`},
		{"unknown codec", func(c *Config) { c.Compression = "lzma" }, `unknown Compression "lzma"`},
		{"tiny files", func(c *Config) { c.MaxFileBytes = 100 }, "MaxFileBytes 100 is too small"},
		{"files over batch", func(c *Config) { c.MaxFileBytes = 128 << 20 }, "exceeds MaxBatchBytes"},
		{"huge batch", func(c *Config) { c.MaxBatchBytes = 8 << 30 }, "MaxBatchBytes"},
		{"negative records", func(c *Config) { c.MaxFileRecords = -1 }, "MaxFileRecords -1"},
		{"shards", func(c *Config) { c.Shards = -2 }, "Shards -2"},
		{"checkpoint", func(c *Config) { c.CheckpointBytes = 10 }, "CheckpointBytes 10 is too small"},
		{"part size", func(c *Config) { c.PartSize = 1 << 20 }, "PartSize"},
		{"endpoint", func(c *Config) { c.Endpoint = "localhost:9000" }, "http:// or https://"},
		{"half credentials", func(c *Config) { c.Credentials = Credentials{AccessKeyIDEnv: "SOME_KEY_ID"} }, "set together"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v; want an error containing %q", err, tc.want)
			}
			p, s := beam.NewPipelineWithRoot()
			if _, err := TryWrite(s, beam.Create(s, "x"), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("TryWrite() = %v; want an error containing %q", err, tc.want)
			}
			assertPanics(t, tc.want, func() { Write(s, beam.Create(s, "x"), cfg) })
			_ = p
		})
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good configuration: %v", err)
	}

	// Problems that need the input's type.
	typed := []struct {
		name string
		col  func(beam.Scope) beam.PCollection
		edit func(*Config)
		want string
	}{
		{"text of ints", func(s beam.Scope) beam.PCollection { return beam.Create(s, 1, 2) }, func(c *Config) {}, `format "text" writes strings or []byte`},
		{"csv of ints", func(s beam.Scope) beam.PCollection { return beam.Create(s, 1, 2) }, func(c *Config) { c.Format = "csv" }, `format "csv"`},
		{"destination type", func(s beam.Scope) beam.PCollection { return beam.Create(s, "a") }, func(c *Config) { c.Destination = countryOf }, "takes sink.order"},
		{"destination shape", func(s beam.Scope) beam.PCollection { return beam.Create(s, "a") }, func(c *Config) { c.Destination = func(string) int { return 0 } }, "want func(T) string"},
		{"destination closure", func(s beam.Scope) beam.PCollection { return beam.Create(s, "a") }, func(c *Config) { n := "x"; c.Destination = func(string) string { return n } }, "cannot be serialised"},
		{"kv input", func(s beam.Scope) beam.PCollection {
			return beam.ParDo(s, func(x string) (string, string) { return x, x }, beam.Create(s, "a"))
		}, func(c *Config) {}, "Write takes single values"},
	}
	for _, tc := range typed {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			_, s := beam.NewPipelineWithRoot()
			if _, err := TryWrite(s, tc.col(s), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("TryWrite() = %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func assertPanics(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), want) {
			t.Fatalf("Write panicked with %v; want a panic containing %q", r, want)
		}
	}()
	f()
}

// logCapture is a slog handler that keeps the messages of every record, and
// of ERROR records apart. The embedded runner logs through slog, the SDK
// harness's own messages included (prism forwards them with an "[SDK] "
// prefix), and so does Beam's log package.
type logCapture struct {
	mu     sync.Mutex
	all    []string
	errors []string
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, r.Message)
	if r.Level >= slog.LevelError {
		c.errors = append(c.errors, r.Message)
	}
	return nil
}

func (c *logCapture) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCapture) WithGroup(string) slog.Handler      { return c }

func (c *logCapture) errorLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errors)
}

// captureLogs sends the process's slog output to a logCapture until the
// test ends, Beam's log package's included: an in-process worker of an
// earlier pipeline left that package logging to its harness, so it is set
// back to its default, which logs through slog (a later worker sets its own
// again).
func captureLogs(t *testing.T) *logCapture {
	c := &logCapture{}
	prev := slog.Default()
	slog.SetDefault(slog.New(c))
	log.SetLogger(&log.Structural{})
	t.Cleanup(func() { slog.SetDefault(prev) })
	return c
}

// userPipeline writes in as a user's program would: a plain Write with the
// defaults, but for files and checkpoints small enough to make many bundles
// (every checkpoint resumes the element in a new bundle).
func userPipeline(t *testing.T, bucket, prefix, finalize string, in []string) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	cfg := testConfig(bucket, prefix)
	cfg.Destination = firstLetter
	cfg.MaxFileRecords = 300
	cfg.CheckpointBytes = MinCheckpointBytes
	cfg.FinalizeCommit = finalize
	collect(t, s, Write(s, beam.CreateList(s, in), cfg))
	if _, err := beam.Run(context.Background(), "prism", p); err != nil {
		t.Fatal(err)
	}
	c := testClient()
	var got []string
	for k, v := range relative(t, c, bucket, prefix) {
		got = append(got, lines(t, k, v)...)
	}
	sameMultiset(t, got, in)
	checkClean(t, c, bucket)
}

// TestFinalizeAutoOnPrism runs a user-style program, without any log filter,
// on the embedded runner with the default FinalizeCommit: the writer asks for
// no bundle finalization, registers no callback, and the run logs no ERROR
// line.
func TestFinalizeAutoOnPrism(t *testing.T) {
	bucket := srv.Bucket(t)
	logs := captureLogs(t)
	reg, ran := finalizeRegistered.Load(), finalizeRan.Load()
	userPipeline(t, bucket, "auto", "", words(4000, 8))
	if n := finalizeRegistered.Load() - reg; n != 0 {
		t.Errorf("%d finalization callbacks registered; want none on prism by default", n)
	}
	if n := finalizeRan.Load() - ran; n != 0 {
		t.Errorf("%d finalization callbacks ran; want none", n)
	}
	if errs := logs.errorLines(); len(errs) > 0 {
		t.Errorf("a good run logged %d ERROR lines, the first: %s", len(errs), errs[0])
	}
	if n := len(results(t)); n < 9 {
		t.Errorf("%d files; want several per destination", n)
	}
}

// TestFinalizeAlwaysOnPrism runs the finalizing writer on the embedded
// runner: every callback it registers runs (none is left behind in a
// finalizer that the SDK no longer runs), and the files are exact. Prism
// still logs its lost-finalization ERROR lines, which is why FinalizeAuto does
// not finalize there.
func TestFinalizeAlwaysOnPrism(t *testing.T) {
	if !finalizeSupported {
		t.Skip("race-enabled builds never finalize bundles (see finalize_race.go); make test runs this test without -race")
	}
	bucket := srv.Bucket(t)
	logs := captureLogs(t)
	reg, ran := finalizeRegistered.Load(), finalizeRan.Load()
	userPipeline(t, bucket, "always", FinalizeAlways, words(4000, 8))
	registered, run := finalizeRegistered.Load()-reg, finalizeRan.Load()-ran
	if registered == 0 || registered != run {
		t.Errorf("%d finalization callbacks registered, %d ran; want as many, and some", registered, run)
	}
	t.Logf("%d files, %d callbacks registered, %d ran, %d ERROR lines from the SDK harness", len(results(t)), registered, run, len(logs.errorLines()))
	// Bounded input in the global window: each partition's manifest, once
	// the input has ended, lists exactly its files.
	byPartition := map[[2]string][]string{}
	for _, r := range results(t) {
		p := [2]string{r.Destination, r.Window}
		byPartition[p] = append(byPartition[p], r.Key)
	}
	if len(byPartition) == 0 {
		t.Fatal("no FileResult")
	}
	for p, keys := range byPartition {
		var listed []string
		for _, e := range manifestOf(t, bucket, "always", p[0], p[1]) {
			listed = append(listed, e.Key)
		}
		slices.Sort(keys)
		if !slices.Equal(listed, keys) {
			t.Errorf("the manifest of %s %s lists %v; the partition's files are %v", p[0], p[1], listed, keys)
		}
	}
}

// TestFinalizeMode checks how FinalizeCommit resolves: FinalizeAuto is
// FinalizeNever on every runner, Dataflow included (a commit at bundle
// finalization escapes the run-wide barrier), and FinalizeAlways holds
// where builds support finalization.
func TestFinalizeMode(t *testing.T) {
	cases := []struct {
		setting, runner string
		supported       bool
		want            string
	}{
		{"", "", true, FinalizeNever},
		{FinalizeAuto, "prism", true, FinalizeNever},
		{FinalizeAuto, "PrismRunner", true, FinalizeNever},
		{"", "universal", true, FinalizeNever},
		{"", "flink", true, FinalizeNever},
		{"", "dataflow", true, FinalizeNever},
		{FinalizeAuto, "DataflowRunner", true, FinalizeNever},
		{FinalizeAuto, "dataflow", false, FinalizeNever},
		{FinalizeAlways, "prism", true, FinalizeAlways},
		{FinalizeAlways, "dataflow", true, FinalizeAlways},
		{FinalizeAlways, "prism", false, FinalizeNever},
		{FinalizeNever, "dataflow", true, FinalizeNever},
	}
	defer func(old string) { *runners.Runner = old }(*runners.Runner)
	for _, c := range cases {
		got, err := finalizeMode(c.setting, c.supported)
		if err != nil || got != c.want {
			t.Errorf("finalizeMode(%q, %v) on runner %q = %q, %v; want %q", c.setting, c.supported, c.runner, got, err, c.want)
		}
		// The runner flag never changes the resolved mode.
		*runners.Runner = c.runner
		cfg := testConfig("bucket", "out")
		cfg.FinalizeCommit = c.setting
		st, err := cfg.settings()
		want, _ := finalizeMode(c.setting, finalizeSupported) // this build's, whatever the runner
		if err != nil || st.FinalizeCommit != want {
			t.Errorf("Config{FinalizeCommit: %q} on runner %q resolves to %q, %v; want %q", c.setting, c.runner, st.FinalizeCommit, err, want)
		}
	}
	if _, err := finalizeMode("sometimes", true); err == nil || !strings.Contains(err.Error(), `FinalizeCommit "sometimes"`) {
		t.Errorf("an unknown setting: %v", err)
	}
	cfg := testConfig("bucket", "out")
	cfg.FinalizeCommit = "Always"
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Validate() = %v; want ErrInvalidConfig", err)
	}
}

// The Go SDK's bundle finalization, reduced to what shows its two faults on
// the embedded runner (Beam Go v2.77), with nothing of s3once in it:
// reproFn is a splittable DoFn that claims one position per bundle (it
// checkpoints after each) and registers one finalization callback per
// position.
//
//  1. The harness runs the callbacks of a plan's first finalized bundle only:
//     exec.Plan.Finalize gives the plan a new finalizer while the ParDo keeps
//     the old one, so the callbacks of later bundles go to a finalizer nobody
//     runs, and stay reachable as long as the plan.
//  2. Prism sends FinalizeBundle after every bundle of a stage that asks for
//     finalization, and the harness logs, at ERROR, "couldn't find plan in
//     finalizing map" for each bundle that had nothing to finalize.
type reproFn struct{}

var reproRegistered, reproRan atomic.Int64

func (reproFn) CreateInitialRestriction(n int64) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: n}
}

func (reproFn) SplitRestriction(_ int64, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (reproFn) RestrictionSize(_ int64, r offsetrange.Restriction) float64 { return r.Size() }

func (reproFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (reproFn) ProcessElement(bf beam.BundleFinalization, rt *sdf.LockRTracker, _ int64) sdf.ProcessContinuation {
	pos := rt.GetRestriction().(offsetrange.Restriction).Start
	if !rt.TryClaim(pos) {
		return sdf.StopProcessing()
	}
	reproRegistered.Add(1)
	bf.RegisterCallback(time.Minute, func() error { reproRan.Add(1); return nil })
	return sdf.ResumeProcessingIn(time.Millisecond)
}

func init() {
	register.DoFn3x1[beam.BundleFinalization, *sdf.LockRTracker, int64, sdf.ProcessContinuation](&reproFn{})
}

// TestBeamFinalizationFaults runs reproFn on prism. It passes while Beam's
// two faults are there; when it fails, Beam has fixed them, and
// FinalizeAuto may finalize on prism too.
func TestBeamFinalizationFaults(t *testing.T) {
	if !finalizeSupported {
		t.Skip("the harness's FinalizeBundle handler races (see finalize_race.go)")
	}
	logs := captureLogs(t)
	reg, ran := reproRegistered.Load(), reproRan.Load()
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo0(s, &reproFn{}, beam.Create(s, int64(20)))
	if _, err := beam.Run(context.Background(), "prism", p); err != nil {
		t.Fatal(err)
	}
	registered, run := reproRegistered.Load()-reg, reproRan.Load()-ran
	lost := 0
	for _, l := range logs.errorLines() {
		if strings.Contains(l, "couldn't find plan in finalizing map") {
			lost++
		}
	}
	t.Logf("%d callbacks registered, %d run; %d ERROR lines", registered, run, lost)
	if registered != 20 {
		t.Fatalf("%d callbacks registered; want 20", registered)
	}
	if run == registered || lost == 0 {
		t.Errorf("Beam runs every callback (%d of %d) and logs %d lost-finalization lines: the SDK's finalization may be fixed; revisit FinalizeAuto and the limits in docs/guarantees.md", run, registered, lost)
	}
}
