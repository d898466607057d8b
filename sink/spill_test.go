package sink

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// sliceValues is a single-pass GroupByKey iterator over recs that reuses
// its buffer, as the Beam harness may.
func sliceValues(recs [][]byte) func(*[]byte) bool {
	i := 0
	var buf []byte
	return func(out *[]byte) bool {
		if i == len(recs) {
			return false
		}
		buf = append(buf[:0], recs[i]...)
		*out = buf
		i++
		return true
	}
}

// scratchDir points os.TempDir at a fresh directory and returns it.
func scratchDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	if os.TempDir() != dir {
		t.Skipf("os.TempDir ignores TMPDIR here")
	}
	return dir
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("%d entries left in the temporary directory, first %s", len(ents), ents[0].Name())
	}
}

func gatherRecords(t *testing.T, recs [][]byte, limit int64) ([]batch, error) {
	t.Helper()
	head := batch{Destination: "d", Window: "global", Pane: 0, Shard: 2, Shards: 4, SubBatches: 1}
	var out []batch
	err := gatherBatches(head, limit, sliceValues(recs), nil, func(b batch) {
		// Copy, as a runner would encode the batch.
		enc, err := encodeBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		d, err := decodeBatch(enc)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	})
	return out, err
}

// TestGatherSpills gathers several times MaxBatchBytes of distinct records:
// they come out once each, in sorted sub-batches that fit the limit, split
// the same way whatever the input order, and the spill files are gone.
func TestGatherSpills(t *testing.T) {
	dir := scratchDir(t)
	const limit = 64 << 10
	r := rand.New(rand.NewPCG(5, 5))
	var recs [][]byte
	var total int64
	for total < 5*limit {
		l := fmt.Appendf(nil, "rec-%07d-%s\n", len(recs), strings.Repeat("q", r.IntN(120)))
		recs = append(recs, l)
		total += int64(len(l))
	}
	n := subBatchCount(total, limit)
	if n != 16 {
		t.Fatalf("%d bytes make %d sub-batches; want 16", total, n)
	}
	split := func(in [][]byte) map[string]int {
		out, err := gatherRecords(t, in, limit)
		if err != nil {
			t.Fatal(err)
		}
		member := map[string]int{}
		for i, b := range out {
			if b.SubBatches != n || b.SubBatch != i || b.Shard != 2 || b.Destination != "d" {
				t.Fatalf("batch %d is sub-batch %d of %d, shard %d, destination %q; want %d of %d, shard 2, d", i, b.SubBatch, b.SubBatches, b.Shard, b.Destination, i, n)
			}
			if !slices.IsSortedFunc(b.Lines, bytes.Compare) {
				t.Errorf("sub-batch %d is not sorted", b.SubBatch)
			}
			var size int64
			for _, l := range b.Lines {
				size += int64(len(l))
				if _, dup := member[string(l)]; dup {
					t.Fatalf("record %q twice", l)
				}
				member[string(l)] = b.SubBatch
			}
			if size > limit || size == 0 {
				t.Errorf("sub-batch %d holds %d bytes; limit %d", b.SubBatch, size, limit)
			}
		}
		if len(member) != len(recs) {
			t.Fatalf("%d records out of %d", len(member), len(recs))
		}
		assertEmptyDir(t, dir)
		return member
	}
	a := split(recs)
	shuffled := slices.Clone(recs)
	rand.New(rand.NewPCG(9, 9)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b := split(shuffled)
	for k, v := range a {
		if b[k] != v {
			t.Fatalf("record %q in sub-batch %d, then %d", k, v, b[k])
		}
	}

	// A group that fits is one batch, as before.
	out, err := gatherRecords(t, recs[:100], limit)
	if err != nil || len(out) != 1 || out[0].SubBatches != 1 || len(out[0].Lines) != 100 {
		t.Fatalf("small group: %d batches, %v", len(out), err)
	}
	assertEmptyDir(t, dir)
}

// TestGatherSkewed: a group of many identical records cannot be split by
// hash; it fails with a message that says so, and leaves no files behind.
func TestGatherSkewed(t *testing.T) {
	dir := scratchDir(t)
	const limit = 4 << 10
	rec := []byte(strings.Repeat("same", 20) + "\n")
	recs := slices.Repeat([][]byte{rec}, 3*limit/len(rec))
	_, err := gatherRecords(t, recs, limit)
	if err == nil || !strings.Contains(err.Error(), "too skewed to split") || !strings.Contains(err.Error(), "raise MaxBatchBytes") ||
		!strings.Contains(err.Error(), `destination "d", window global, pane 0, shard 2 of 4`) {
		t.Fatalf("gather = %v; want the skew error", err)
	}
	assertEmptyDir(t, dir)
}

// TestSplitShard writes one shard of about four times MaxBatchBytes through
// prism: it is written as sub-batches, every record once, and a rerun writes
// the same bytes under the same names.
func TestSplitShard(t *testing.T) {
	bucket := srv.Bucket(t)
	const limit = MinMaxBatchBytes
	in := words(165, 8)
	var total int
	for _, w := range in {
		total += len(w) + 1
	}
	if total < 7*limit/2 || total > 5*limit {
		t.Fatalf("input of %d bytes; want about four times %d", total, limit)
	}
	n := subBatchCount(int64(total), limit)
	for run := 0; run < 2; run++ {
		xs := slices.Clone(in)
		rand.New(rand.NewPCG(uint64(run), 3)).Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
		p, s := beam.NewPipelineWithRoot()
		cfg := testConfig(bucket, fmt.Sprintf("split%d", run))
		cfg.Shards = 1
		cfg.MaxBatchBytes = limit
		collect(t, s, Write(s, beam.CreateList(s, xs), cfg))
		if err := ptest.Run(p); err != nil {
			t.Fatal(err)
		}
	}
	c := testClient()
	a, b := relative(t, c, bucket, "split0"), relative(t, c, bucket, "split1")
	name := regexp.MustCompile(`^global-pane-0-shard-00000-of-00001-batch-(\d\d)-of-(\d\d)-file-\d{5}\.txt$`)
	subs := map[string]bool{}
	var got []string
	for k, v := range a {
		m := name.FindStringSubmatch(k)
		if m == nil {
			t.Fatalf("unexpected object %s", k)
		}
		if m[2] != fmt.Sprintf("%02d", n) {
			t.Errorf("%s: want %d sub-batches for %d bytes", k, n, total)
		}
		subs[m[1]] = true
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			t.Errorf("%s differs between runs", k)
		}
		got = append(got, lines(t, k, v)...)
	}
	if len(a) != len(b) {
		t.Errorf("runs wrote %d and %d files", len(a), len(b))
	}
	if len(subs) < n*3/4 {
		t.Errorf("files from sub-batches %v; want most of the %d", subs, n)
	}
	sameMultiset(t, got, in)
	for _, r := range results(t) {
		if r.SubBatches != n || !strings.Contains(r.Key, fmt.Sprintf("-batch-%02d-of-%02d-", r.SubBatch, n)) {
			t.Errorf("result %+v does not match its key", r)
		}
	}
	t.Logf("%d bytes in %d files over %d sub-batches", total, len(a), len(subs))
	checkClean(t, c, bucket)
}

// TestGatherTooLarge: a shard too large for 64 sub-batches fails with a
// message that says to raise Shards, and leaves no files behind.
func TestGatherTooLarge(t *testing.T) {
	dir := scratchDir(t)
	const limit = 1 << 10
	var recs [][]byte
	for i := 0; i < 8000; i++ { // about 100 times limit
		recs = append(recs, fmt.Appendf(nil, "record-%05d\n", i))
	}
	_, err := gatherRecords(t, recs, limit)
	if err == nil || !strings.Contains(err.Error(), "too many for 64 sub-batches") || !strings.Contains(err.Error(), "raise Shards") {
		t.Fatalf("gather = %v; want the too-large error", err)
	}
	assertEmptyDir(t, dir)
}

func TestFileKeySubBatch(t *testing.T) {
	b := &batch{Destination: "d", Window: "global", Shard: 1, Shards: 4, SubBatch: 3, SubBatches: 8}
	if got, want := fileKey(settings{Prefix: "out"}, ".txt", b, 2), "out/d/global-pane-0-shard-00001-of-00004-batch-03-of-08-file-00002.txt"; got != want {
		t.Errorf("fileKey = %q, want %q", got, want)
	}
}

// spillHolderEnv, when set, makes the test binary a helper that starts a
// spill in TMPDIR, prints its directory and waits to be killed.
const spillHolderEnv = "S3ONCE_SPILL_HOLDER"

// TestSpillHolderChild is the helper process of TestStaleSpillRemoved; run
// on its own it does nothing.
func TestSpillHolderChild(t *testing.T) {
	if os.Getenv(spillHolderEnv) == "" {
		t.Skip("helper process of TestStaleSpillRemoved")
	}
	sp, err := newSpill(spillBufferSize)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if err := sp.add([]byte("a record in a spill of a worker about to be killed\n")); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	// The spill must stay reachable while the helper waits: were it garbage,
	// a collection would run its lock file's cleanup, which closes the file
	// and so drops the lock, and the helper would look dead while it lives.
	// The helper collects before it reports, so that a spill left unreachable
	// shows here every time, not only when a busy machine happens to collect.
	heldSpill = sp
	dir := sp.dir
	runtime.GC()
	runtime.GC()
	fmt.Println("spill", dir)
	select {} // until SIGKILL
}

// heldSpill keeps the helper's spill, and so its lock, reachable.
var heldSpill *spill

// setupBatchFn runs the batching DoFn's Setup, as a worker does when it
// builds the DoFn.
func setupBatchFn(t *testing.T) {
	t.Helper()
	var fn any = &batchFn{MaxBatchBytes: MinMaxBatchBytes}
	s, ok := fn.(interface{ Setup(context.Context) error })
	if !ok {
		t.Fatal("the batching DoFn has no Setup: nothing removes the spill directories of killed workers")
	}
	if err := s.Setup(context.Background()); err != nil {
		t.Fatalf("Setup: %v", err)
	}
}

// startSpillHolder starts a helper process that spills into the test's
// TMPDIR and holds its spill's lock; it returns the process and the spill
// directory.
func startSpillHolder(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestSpillHolderChild$", "-test.count=1")
	// childEnv keeps TestMain from starting an S3 server in the helper.
	cmd.Env = append(os.Environ(), spillHolderEnv+"=1", childEnv+"=unused")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper process: %v", err)
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "spill ")
	if !ok {
		t.Fatalf("helper process said %q", line)
	}
	return cmd, dir
}

// age sets a directory's modification time d into the past.
func age(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestStaleSpillRemoved: a helper process spills and is SIGKILLed; its spill
// directory outlives it, and the next Setup of the batching DoFn removes it.
// While the helper lived, the same directory, although old, survived Setup:
// its lock told that a worker still used it.
func TestStaleSpillRemoved(t *testing.T) {
	tmp := scratchDir(t)
	cmd, dir := startSpillHolder(t)
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "s3once-batch-") {
		t.Fatalf("helper spilled into %s; want an s3once-batch- directory in %s", dir, tmp)
	}
	age(t, dir, 2*time.Hour)
	setupBatchFn(t)
	if !exists(t, dir) {
		t.Fatal("Setup removed the spill directory of a live worker")
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL, by its PID
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the helper exited cleanly; want killed")
	}
	if !exists(t, dir) {
		t.Fatal("the killed helper's spill directory is gone before any Setup; the test proves nothing")
	}
	age(t, dir, 2*time.Hour)
	setupBatchFn(t)
	if exists(t, dir) {
		t.Fatalf("Setup left %s, the spill directory of a killed worker", dir)
	}
}

// TestLiveSpillSurvives: Setup leaves the spill directories of live workers,
// in another process or in this one, however old, and young directories
// whose lock is free (the age floor), and anything not named like a spill.
func TestLiveSpillSurvives(t *testing.T) {
	tmp := scratchDir(t)
	_, other := startSpillHolder(t)
	age(t, other, 48*time.Hour)

	mine, err := newSpill(spillBufferSize)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.remove()
	age(t, mine.dir, 48*time.Hour)

	// A spill whose worker is gone, with its lock free, but younger than the
	// age floor.
	young, err := newSpill(spillBufferSize)
	if err != nil {
		t.Fatal(err)
	}
	youngDir := young.dir
	releaseLock(t, young)
	age(t, youngDir, staleSpillAge/2)

	// Not a spill directory: a file and a directory of other names.
	otherFile := filepath.Join(tmp, "s3once-batch-not-a-dir")
	if err := os.WriteFile(otherFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	age(t, otherFile, 48*time.Hour)
	foreign := filepath.Join(tmp, "someone-else-batch-1")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	age(t, foreign, 48*time.Hour)

	setupBatchFn(t)
	for _, p := range []string{other, mine.dir, youngDir, otherFile, foreign} {
		if !exists(t, p) {
			t.Errorf("Setup removed %s", p)
		}
	}

	// Once past the floor, the free one goes; the others stay.
	age(t, youngDir, staleSpillAge+time.Minute)
	setupBatchFn(t)
	if exists(t, youngDir) {
		t.Errorf("Setup left %s, free and older than the age floor", youngDir)
	}
	for _, p := range []string{other, mine.dir, otherFile, foreign} {
		if !exists(t, p) {
			t.Errorf("Setup removed %s", p)
		}
	}
	// The live spill in this process still works after the scans.
	if err := mine.add([]byte("still writing\n")); err != nil {
		t.Fatal(err)
	}
	if err := mine.finish(); err != nil {
		t.Fatal(err)
	}
	if got, err := mine.read(0, maxSubBatches); err != nil || len(got) != 1 {
		t.Fatalf("read back %d records, %v; want 1", len(got), err)
	}
}

// releaseLock makes sp look like the spill of a worker that died: its files
// stay, its lock is free.
func releaseLock(t *testing.T, sp *spill) {
	t.Helper()
	for i, f := range sp.files {
		if f != nil {
			_ = f.Close()
			sp.files[i] = nil
		}
	}
	if err := sp.lock.Close(); err != nil {
		t.Fatal(err)
	}
	sp.lock = nil
}
