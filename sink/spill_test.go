package sink

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/internal/spill"
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
	n := spill.SubBatches(total, limit)
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
	n := spill.SubBatches(int64(total), limit)
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
	if got, want := fileKey(folder{Prefix: "out"}, ".txt", b, 2), "out/d/global-pane-0-shard-00001-of-00004-batch-03-of-08-file-00002.txt"; got != want {
		t.Errorf("fileKey = %q, want %q", got, want)
	}
}

// TestBatchSetupRemovesStaleSpills: the batching DoFn's Setup removes the
// spill directories that killed workers left in os.TempDir (TMPDIR), as
// spill.RemoveStale judges them (internal/spill's tests kill a worker),
// and leaves the rest.
func TestBatchSetupRemovesStaleSpills(t *testing.T) {
	tmp := scratchDir(t)
	old := time.Now().Add(-48 * time.Hour)
	stale := filepath.Join(tmp, "s3once-batch-1") // no lock file: a day old is enough
	other := filepath.Join(tmp, "someone-else-batch-1")
	for _, d := range []string{stale, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	var fn any = &batchFn{MaxBatchBytes: MinMaxBatchBytes}
	s, ok := fn.(interface{ Setup(context.Context) error })
	if !ok {
		t.Fatal("the batching DoFn has no Setup: nothing removes the spill directories of killed workers")
	}
	if err := s.Setup(context.Background()); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("Setup left %s, a stale spill directory (%v)", stale, err)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("Setup removed %s, not a spill directory (%v)", other, err)
	}
}
