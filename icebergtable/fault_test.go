package icebergtable

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// The catalog fault matrix: loops of commits through Table.Commit, each
// with a seeded plan of one fault kind at random catalog calls
// (faultcat_test.go), in five scenarios, each loop on a table of its own;
// after every loop checkFaultTable reads the table independently.
const (
	faultSeedEnv  = "S3ONCE_CATALOG_FAULT_SEED"  // replay one loop seed
	faultLoopsEnv = "S3ONCE_CATALOG_FAULT_LOOPS" // loops per fault kind (make soak: 200)
)

// pinnedFaultSeeds always run; one random seed per kind joins them.
var pinnedFaultSeeds = []uint64{1, 3}

// faultScenario is one way of committing under faults.
type faultScenario struct {
	name string
	run  func(l *faultLoop) ([]wantRun, error)
}

var faultScenarios = []faultScenario{
	{"retry", scenarioRetry},
	{"restart", scenarioRestart},
	{"new-run-id", scenarioNewRunID},
	{"two-writers", scenarioTwoWriters},
	{"rollback", scenarioRollback},
}

// faultFixture is what every loop shares: a bucket, an S3 client, and one
// run's files written once by the sink, copied into each loop's run folders.
type faultFixture struct {
	bucket  string
	client  *s3.Client
	tmpl    []sink.FileResult
	tmplDir string
	n       int
}

func newFaultFixture(t *testing.T) *faultFixture {
	t.Helper()
	bucket := srv.Bucket(t)
	tbl := openTable(t, newCatalog(t, bucket))
	f := &faultFixture{bucket: bucket, client: s3test.NewClient(endpoint, s3test.ClientOptions{})}
	f.tmpl = writeRun(t, tbl, "template", events(0, 600))
	_, f.tmplDir, _ = tbl.RunFolder("template")
	return f
}

// faultLoop is one loop: its table, its fault state, its story.
type faultLoop struct {
	t     *testing.T
	fx    *faultFixture
	seed  uint64
	kind  faultKind
	rng   *rand.Rand
	inner catalog.Catalog
	props map[string]string
	cat   *faultCatalog
	loc   string
	// storyMu guards story: the two-writers scenario's writers both log.
	storyMu sync.Mutex
	story   []string
}

func (l *faultLoop) logf(format string, args ...any) {
	l.storyMu.Lock()
	defer l.storyMu.Unlock()
	l.story = append(l.story, fmt.Sprintf(format, args...))
}

// runFiles copies the template run into the run's folder of this loop's
// table and returns its results there.
func (l *faultLoop) runFiles(runID string) ([]sink.FileResult, wantRun) {
	l.t.Helper()
	ctx := context.Background()
	_, prefix, err := (&Table{bucket: l.fx.bucket, path: strings.TrimPrefix(l.loc, "s3://"+l.fx.bucket+"/")}).RunFolder(runID)
	if err != nil {
		l.t.Fatal(err)
	}
	w := wantRun{id: runID, files: map[string]int64{}}
	out := make([]sink.FileResult, 0, len(l.fx.tmpl))
	for _, r := range l.fx.tmpl {
		key := prefix + strings.TrimPrefix(r.Key, l.fx.tmplDir)
		if _, err := l.fx.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(l.fx.bucket), Key: aws.String(key),
			CopySource: aws.String(l.fx.bucket + "/" + r.Key)}); err != nil {
			l.t.Fatal(err)
		}
		r.Key = key
		out = append(out, r)
		w.files[key] = r.Records
	}
	return out, w
}

// open opens a new handle on the loop's table, retrying faults.
func (l *faultLoop) open() *Table {
	l.t.Helper()
	var err error
	for range 50 {
		var tbl *Table
		if tbl, err = Open(context.Background(), l.cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), l.loc); err == nil {
			return tbl
		}
	}
	l.t.Fatalf("open under faults: %v", err)
	return nil
}

// commit commits the run with the handle next gives, retrying (the same
// run id) after each failure until it succeeds; a changed-run refusal
// is a failure of the loop.
func (l *faultLoop) commit(next func() *Table, runID string, files []sink.FileResult) (Result, error) {
	var err error
	for attempt := 1; attempt <= 60; attempt++ {
		var res Result
		res, err = next().Commit(context.Background(), runID, "global", files)
		if err == nil {
			l.logf("%s: %d attempts, added %v", runID, attempt, res.Added)
			return res, nil
		}
		if errors.Is(err, ErrRunChanged) {
			return res, fmt.Errorf("run %s refused as changed: %w", runID, err)
		}
	}
	return Result{}, fmt.Errorf("run %s: 60 attempts failed, the last: %w", runID, err)
}

// The same run id retried on one handle after each fault, three runs.
func scenarioRetry(l *faultLoop) ([]wantRun, error) {
	tbl := l.open()
	var want []wantRun
	for _, id := range []string{"a", "b", "c"} {
		files, w := l.runFiles(id)
		if _, err := l.commit(func() *Table { return tbl }, id, files); err != nil {
			return want, err
		}
		want = append(want, w)
	}
	return want, nil
}

// Every attempt from scratch: a new handle, no state but the table.
func scenarioRestart(l *faultLoop) ([]wantRun, error) {
	var want []wantRun
	for _, id := range []string{"a", "b"} {
		files, w := l.runFiles(id)
		if _, err := l.commit(l.open, id, files); err != nil {
			return want, err
		}
		want = append(want, w)
	}
	return want, nil
}

// The same input under a new run id appends again: the run id is the
// idempotency key (docs/guarantees.md). Two snapshots, each once.
func scenarioNewRunID(l *faultLoop) ([]wantRun, error) {
	tbl := l.open()
	var want []wantRun
	for _, id := range []string{"a", "a-again"} {
		files, w := l.runFiles(id)
		res, err := l.commit(func() *Table { return tbl }, id, files)
		if err != nil {
			return want, err
		}
		if id == "a-again" && res.SnapshotID == 0 {
			return want, fmt.Errorf("the new run id found no snapshot of its own")
		}
		want = append(want, w)
	}
	return want, nil
}

// Two writers (handles) of one run id at once, each retrying until it
// succeeds; both must name the same snapshot.
func scenarioTwoWriters(l *faultLoop) ([]wantRun, error) {
	a, b := l.open(), l.open()
	var want []wantRun
	for _, id := range []string{"a", "b"} {
		files, w := l.runFiles(id)
		var wg sync.WaitGroup
		var res [2]Result
		var errs [2]error
		for i, tbl := range []*Table{a, b} {
			wg.Go(func() { res[i], errs[i] = l.commit(func() *Table { return tbl }, id, files) })
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			return want, err
		}
		if res[0].SnapshotID != res[1].SnapshotID {
			return want, fmt.Errorf("run %s: the writers report snapshots %d and %d", id, res[0].SnapshotID, res[1].SnapshotID)
		}
		want = append(want, w)
	}
	return want, nil
}

// A base run, then a run whose table is rolled back to the base's
// snapshot once, after the first attempt (failed or not) that left the
// run in main; attempts go on, on the same handle, until one succeeds
// after the rollback.
func scenarioRollback(l *faultLoop) ([]wantRun, error) {
	tbl := l.open()
	baseFiles, base := l.runFiles("base")
	baseRes, err := l.commit(func() *Table { return tbl }, "base", baseFiles)
	if err != nil {
		return nil, err
	}
	files, w := l.runFiles("r")
	rolled := false
	for attempt := 1; ; attempt++ {
		_, err := tbl.Commit(context.Background(), "r", "global", files)
		if errors.Is(err, ErrRunChanged) {
			return nil, err
		}
		if !rolled {
			cur, lerr := l.inner.LoadTable(context.Background(), table.Identifier{"lake", "events"})
			if lerr != nil {
				return nil, lerr
			}
			if findRun(cur, "r", "global") != nil {
				rollback(l.t, l.inner, baseRes.SnapshotID)
				rolled = true
				l.logf("r: rolled back to the base after attempt %d (%v)", attempt, err)
				continue
			}
		}
		if err == nil && rolled {
			l.logf("r: %d attempts", attempt)
			break
		}
		if attempt == 60 {
			return nil, fmt.Errorf("run r: 60 attempts, the last: %v (rolled back %v)", err, rolled)
		}
	}
	return []wantRun{base, w}, nil
}

// newFaultLoop makes the loop's table (unfaulted) and arms the plan.
func newFaultLoop(t *testing.T, fx *faultFixture, n int, seed uint64, kind faultKind) *faultLoop {
	t.Helper()
	props := sqliteDefaults(catalogProps(t, fx.bucket))
	inner, err := catalog.Load(context.Background(), "s3once-fault", iceberg.Properties(props))
	if err != nil {
		t.Fatal(err)
	}
	l := &faultLoop{t: t, fx: fx, seed: seed, kind: kind, rng: rand.New(rand.NewPCG(seed, 1)), inner: inner, props: props,
		loc: fmt.Sprintf("s3://%s/loop-%d-%x", fx.bucket, n, seed)}
	l.cat = &faultCatalog{Catalog: inner, st: newFaultState(newFaultPlan(seed, kind, 40, 0.3))}
	l.open()
	l.cat.st.arm()
	return l
}

// faultScenarioOf is the scenario of a loop: a function of its seed and
// kind, so that the seed replays it.
func faultScenarioOf(seed uint64, kind faultKind) faultScenario {
	return faultScenarios[(seed+uint64(kind))%uint64(len(faultScenarios))]
}

// faultSeeds are the loop seeds of a kind: S3ONCE_CATALOG_FAULT_SEED
// alone; else S3ONCE_CATALOG_FAULT_LOOPS random ones; else the pinned
// ones and one random.
func faultSeeds(t *testing.T) func() []uint64 {
	if v := os.Getenv(faultSeedEnv); v != "" {
		seed, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a number", faultSeedEnv, v)
		}
		return func() []uint64 { return []uint64{seed} }
	}
	loops := 0
	if v := os.Getenv(faultLoopsEnv); v != "" {
		var err error
		if loops, err = strconv.Atoi(v); err != nil || loops < 1 {
			t.Fatalf("%s=%q: want a positive count", faultLoopsEnv, v)
		}
	}
	return func() []uint64 {
		if loops > 0 {
			out := make([]uint64, loops)
			for i := range out {
				out[i] = rand.Uint64()
			}
			return out
		}
		return append(append([]uint64(nil), pinnedFaultSeeds...), rand.Uint64())
	}
}

// faultTally counts a matrix run for the log (and docs/testing.md).
type faultTally struct {
	mu       sync.Mutex
	loops    map[faultKind]int
	injected map[faultKind]int
}

func (f *faultTally) add(kind faultKind, injected map[faultKind]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loops == nil {
		f.loops, f.injected = map[faultKind]int{}, map[faultKind]int{}
	}
	f.loops[kind]++
	for k, n := range injected {
		f.injected[k] += n
	}
}

func (f *faultTally) String() string {
	var s []string
	for _, k := range faultKinds {
		if f.loops[k] > 0 {
			s = append(s, fmt.Sprintf("%v: %d loops, %d faults", k, f.loops[k], f.injected[k]))
		}
	}
	return strings.Join(s, "; ")
}

// runFaultLoop runs one loop and checks its table; the error names the
// seed to replay it with.
func runFaultLoop(t *testing.T, fx *faultFixture, n int, seed uint64, kind faultKind, sc faultScenario, tally *faultTally) error {
	t.Helper()
	l := newFaultLoop(t, fx, n, seed, kind)
	want, err := sc.run(l)
	if err == nil {
		var rep tableReport
		if rep, err = checkFaultTable(context.Background(), fx.client, l.inner, want); err == nil {
			l.logf("checked: %d snapshots, %d in main's ancestry, %d data files, %d records", rep.snapshots, rep.ancestry, rep.dataFiles, rep.records)
		}
	}
	counts := l.cat.st.counts()
	tally.add(kind, counts)
	if err != nil {
		return fmt.Errorf("%s, %v, seed %d (replay: %s=%d): plan %v, injected %v; %s:\n%w", sc.name, kind, seed, faultSeedEnv, seed, l.cat.st.plan, counts[kind], strings.Join(l.story, "; "), err)
	}
	if testing.Verbose() {
		t.Logf("%s, %v, seed %d: %d faults; %s", sc.name, kind, seed, counts[kind], strings.Join(l.story, "; "))
	}
	return nil
}

// TestFaultMatrix runs every in-process fault kind in every scenario, for
// each loop seed (faultSeeds), the scenario of a loop chosen by its seed
// and kind (faultScenarioOf); each loop's table must pass checkFaultTable.
func TestFaultMatrix(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("in the child")
	}
	began := time.Now()
	fx := newFaultFixture(t)
	seeds := faultSeeds(t)
	var tally faultTally
	n := 0
	for _, kind := range faultKinds {
		if kind == faultKill {
			continue // TestFaultMatrixKill
		}
		for _, seed := range seeds() {
			sc := faultScenarioOf(seed, kind)
			n++
			if err := runFaultLoop(t, fx, n, seed, kind, sc, &tally); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d loops in %v: %v", n, time.Since(began).Round(time.Millisecond), &tally)
}
