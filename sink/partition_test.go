package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// partitionRun writes in to prefix on prism, one destination per first
// letter, in files of at most 200 records, and returns the pipeline's error.
func partitionRun(t *testing.T, bucket, prefix string, in []string, tune func(*Config)) (map[string]int64, error) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	cfg := testConfig(bucket, prefix)
	cfg.Destination = firstLetter
	cfg.Shards = 2
	cfg.MaxFileRecords = 200
	if tune != nil {
		tune(&cfg)
	}
	Write(s, beam.CreateList(s, in), cfg)
	pr, err := beam.Run(context.Background(), "prism", p)
	return counters(pr), err
}

// lastFile picks, among the folder's files, the one with the highest file
// index of its shard (not its shard's only file), and returns its key and
// records.
func lastFile(t *testing.T, files map[string][]byte) (string, []string) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(files))
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		if ownkeys.IsFileName("", k) && !strings.Contains(k, "-file-00000") {
			return k, strings.Split(strings.TrimSuffix(string(files[k]), "\n"), "\n")
		}
	}
	t.Fatal("no shard has two files")
	return "", nil
}

// without returns in less the records of drop.
func without(in, drop []string) []string {
	gone := map[string]bool{}
	for _, r := range drop {
		gone[r] = true
	}
	var out []string
	for _, r := range in {
		if !gone[r] {
			out = append(out, r)
		}
	}
	return out
}

// checkRefusedPartition checks that err is the partition refusal naming key,
// and that it says what to do.
func checkRefusedPartition(t *testing.T, err error, key string) {
	t.Helper()
	if err == nil {
		t.Fatal("the rerun succeeded; want it refused")
	}
	msg := err.Error()
	if !errcode.Has(errors.New(msg), errcode.PartitionChanged) {
		t.Errorf("the failure lacks %s: %s", errcode.PartitionChanged.Token(), msg)
	}
	for _, want := range []string{key, "delete the partition", "fresh Prefix", "nothing of this run was committed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q: %s", want, msg)
		}
	}
}

// TestPartitionKeepsOneRun: a rerun whose input lacks exactly the records
// of an earlier run's last file in a partition would write the other files
// identically and leave that file behind, so that the partition held the
// union of two inputs. It is refused before any commit, naming the file,
// and the folder stays as the first run left it.
func TestPartitionKeepsOneRun(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	in := words(2000, 21)
	if _, err := partitionRun(t, bucket, "out", in, nil); err != nil {
		t.Fatal(err)
	}
	before := relative(t, c, bucket, "out")
	key, recs := lastFile(t, before)

	_, err := partitionRun(t, bucket, "out", without(in, recs), nil)
	checkRefusedPartition(t, err, "out/"+key)
	if !maps.EqualFunc(before, relative(t, c, bucket, "out"), bytes.Equal) {
		t.Error("the refused run changed the folder")
	}
	checkClean(t, c, bucket)

	// The first run's input again: every file kept.
	if _, err := partitionRun(t, bucket, "out", in, nil); err != nil {
		t.Fatalf("a rerun of the first input: %v", err)
	}
	if !maps.EqualFunc(before, relative(t, c, bucket, "out"), bytes.Equal) {
		t.Error("a rerun of the first input changed the folder")
	}
}

// TestPartitionSubBatchesRefused: a shard that the first run split into
// sub-batches and a rerun does not gets names that share nothing with the
// first run's, so no key of the rerun is taken: the partition check still
// refuses it before any commit.
func TestPartitionSubBatchesRefused(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	small := func(cfg *Config) {
		cfg.Destination = nil
		cfg.Shards = 1
		cfg.MaxBatchBytes = 8 << 10
		cfg.MaxFileBytes = 8 << 10
		cfg.MaxFileRecords = 0
	}
	in := words(3000, 22)
	if _, err := partitionRun(t, bucket, "out", in, small); err != nil {
		t.Fatal(err)
	}
	before := relative(t, c, bucket, "out")
	split := false
	for k := range before {
		split = split || strings.Contains(k, "-batch-")
	}
	if !split {
		t.Fatalf("the first run split no shard into sub-batches: %v", slices.Sorted(maps.Keys(before)))
	}
	_, err := partitionRun(t, bucket, "out", in[:50], small)
	checkRefusedPartition(t, err, "out/global-pane-0-shard-00000-of-00001-batch-")
	if !maps.EqualFunc(before, relative(t, c, bucket, "out"), bytes.Equal) {
		t.Error("the refused run changed the folder")
	}
	checkClean(t, c, bucket)
}

// TestPartitionAppend: partitions a rerun does not write are left alone,
// and new ones are appended: the first run writes letter=a, b and c, the
// second drops every c record and adds d records; it succeeds, keeps a and
// b, adds d, and leaves c as it was.
func TestPartitionAppend(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	in := words(2000, 23)
	if _, err := partitionRun(t, bucket, "out", in, nil); err != nil {
		t.Fatal(err)
	}
	before := relative(t, c, bucket, "out")
	var second []string
	for _, r := range in {
		if r[0] != 'c' {
			second = append(second, r)
		}
	}
	for i := range 50 {
		second = append(second, "d"+words(1, uint64(100+i))[0])
	}
	m, err := partitionRun(t, bucket, "out", second, nil)
	if err != nil {
		t.Fatalf("an append of a new partition: %v", err)
	}
	after := relative(t, c, bucket, "out")
	for k, b := range before {
		if !bytes.Equal(after[k], b) {
			t.Errorf("%s changed or went", k)
		}
	}
	added := 0
	for k := range after {
		if _, ok := before[k]; ok {
			continue
		}
		if !strings.HasPrefix(k, "letter=d/") {
			t.Errorf("the append wrote %s outside letter=d/", k)
		}
		added++
	}
	if added == 0 {
		t.Error("the append wrote nothing in letter=d/")
	}
	if m["barrier_kept"] == 0 {
		t.Error("the append kept no file of letter=a or letter=b")
	}
	// Every partition the second run wrote has its manifest, listing
	// exactly its files; letter=c keeps the first run's.
	for _, dest := range []string{"letter=a", "letter=b", "letter=c", "letter=d"} {
		key := ownkeys.ManifestKey("out", dest, "global")
		entries := manifestOf(t, bucket, "out", dest, "global")
		var listed, present []string
		for _, e := range entries {
			listed = append(listed, e.Key)
			if int64(len(after[strings.TrimPrefix(e.Key, "out/")])) != e.Size {
				t.Errorf("%s lists %s with %d bytes", key, e.Key, e.Size)
			}
		}
		for k := range after {
			if ownkeys.IsPartitionFile("", dest, "global", k) {
				present = append(present, "out/"+k)
			}
		}
		slices.Sort(present)
		if !slices.Equal(listed, present) {
			t.Errorf("%s lists %v; the partition holds %v", key, listed, present)
		}
	}
}

// TestFinalizeAlwaysChangedRerun: with FinalizeCommit "always", files are
// committed at bundle finalization, before any barrier; a rerun with other
// Shards is still refused before any commit (the writer checks the
// settings marker before it registers a callback), and the folder keeps
// only the first run's files. Run without the race detector (make test's
// second pass).
func TestFinalizeAlwaysChangedRerun(t *testing.T) {
	if !finalizeSupported {
		t.Skip("race-enabled builds never finalize bundles (see finalize_race.go); make test runs this test without -race")
	}
	bucket := srv.Bucket(t)
	c := testClient()
	in := words(1500, 24)
	always := func(shards int) func(*Config) {
		return func(cfg *Config) { cfg.Shards, cfg.FinalizeCommit = shards, FinalizeAlways }
	}
	reg := finalizeRegistered.Load()
	if _, err := partitionRun(t, bucket, "out", in, always(2)); err != nil {
		t.Fatal(err)
	}
	if finalizeRegistered.Load() == reg {
		t.Fatal("the first run registered no finalization callback")
	}
	before := relative(t, c, bucket, "out")
	_, err := partitionRun(t, bucket, "out", in, always(3))
	if !errors.Is(err, ErrSettingsChanged) && !errcode.Has(err, errcode.SettingsChanged) {
		t.Fatalf("a rerun with other Shards: %v; want the settings refused", err)
	}
	if !strings.Contains(err.Error(), "Shards 2 -> 3") {
		t.Errorf("the failure does not name the setting: %v", err)
	}
	if after := relative(t, c, bucket, "out"); !maps.EqualFunc(before, after, bytes.Equal) {
		var extra []string
		for k := range after {
			if _, ok := before[k]; !ok {
				extra = append(extra, k)
			}
		}
		t.Errorf("the refused rerun committed %d files: %v", len(extra), extra)
	}
	sweep(t, c, bucket)
	checkClean(t, c, bucket)
}

// manifestOf reads the manifest of a partition.
func manifestOf(t *testing.T, bucket, prefix, dest, window string) []manifest.Entry {
	t.Helper()
	b := s3test.Object(t, testClient(), bucket, ownkeys.ManifestKey(prefix, dest, window))
	entries, err := manifest.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestCommitStageMarksBeforeCommit: where no barrier runs, the commit
// stage writes a new folder's settings marker before its first commit, so
// that no crash can leave a committed file in a folder without one; and in
// a complete partition (its manifest in place) it commits no file the
// manifest does not list.
func TestCommitStageMarksBeforeCommit(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	c := testClient()
	st, err := testConfig(bucket, "out").settings()
	if err != nil {
		t.Fatal(err)
	}
	closed := func(key string, body string) (pendingFile, recoverable.CommitToken) {
		w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: recoverable.MinPartSize, StagingPrefix: st.StagingPrefix})
		if err != nil {
			t.Fatal(err)
		}
		s, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]byte(body))
		cr, err := s.CloseForCommit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := coder.EncodeCommitToken(cr)
		if err != nil {
			t.Fatal(err)
		}
		return pendingFile{Commit: b, Result: FileResult{Bucket: bucket, Key: key, Window: "global", Bytes: cr.Size(), CRC64NVME: cr.CRC()}}, cr
	}
	first, _ := closed("out/global-pane-0-shard-00000-of-00001-file-00000.txt", "a\n")
	log := s3fault.New(c)
	fn := &commitFn{S: st.folder, Settings: encodeSettings(st.markerSettings()), Manifests: true}
	if err := fn.init(log); err != nil {
		t.Fatal(err)
	}
	if err := fn.ProcessElement(ctx, first, func(FileResult) {}); err != nil {
		t.Fatal(err)
	}
	marked, completed := 0, 0
	for _, call := range log.Calls() {
		switch {
		case call.Op == s3fault.PutObject && call.Key == ownkeys.SettingsKey("out"):
			marked = call.Seq
		case call.Op == s3fault.CompleteMultipartUpload && completed == 0:
			completed = call.Seq
		}
	}
	if marked == 0 || completed == 0 || marked > completed {
		t.Fatalf("the marker was written at call %d, the first completion at %d; want the marker first", marked, completed)
	}

	// The partition is complete: its manifest lists the first file only.
	body, err := manifest.Encode([]manifest.Entry{{Key: first.Result.Key, Size: first.Result.Bytes, CRC64NVME: first.Result.CRC64NVME, Records: first.Result.Records}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(ownkeys.ManifestKey("out", "", "global")), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	second, _ := closed("out/global-pane-0-shard-00000-of-00001-file-00001.txt", "b\n")
	fn2 := &commitFn{S: st.folder, Settings: encodeSettings(st.markerSettings()), Manifests: true}
	if err := fn2.init(c); err != nil {
		t.Fatal(err)
	}
	err = fn2.ProcessElement(ctx, second, func(FileResult) {})
	if !errors.Is(err, ErrPartitionChanged) || !strings.Contains(err.Error(), "is complete") {
		t.Fatalf("a file the complete partition's manifest does not list: %v", err)
	}
	if keys := s3test.Keys(t, c, bucket, second.Result.Key); len(keys) != 0 {
		t.Fatalf("the refused file was committed: %v", keys)
	}
	// The listed file again (a rerun): committed already, accepted.
	fn3 := &commitFn{S: st.folder, Settings: encodeSettings(st.markerSettings()), Manifests: true}
	if err := fn3.init(c); err != nil {
		t.Fatal(err)
	}
	if err := fn3.ProcessElement(ctx, first, func(FileResult) {}); err != nil {
		t.Fatalf("a file the manifest lists: %v", err)
	}
}

// TestManifestAtWindowExpiry: unbounded input in one-hour windows that fire
// early every 40 records, with late data within the allowed lateness and
// data beyond it. Each partition of the window gets one manifest, written
// when the window expires, listing exactly the files committed for it
// (every pane, the late one included); the completion marker is written
// once for the window, after the manifests, and lists the same files;
// WriteWindows emits the window once, with the same files; the data beyond
// the lateness is dropped by Beam, and shows as the gap between the
// records_received and records_written counters.
func TestManifestAtWindowExpiry(t *testing.T) {
	bucket := srv.Bucket(t)
	ts := teststream.NewConfig()
	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }
	var kept []string
	add := func(ms int64, tag string, n int, keep bool) {
		var batch []string
		for i := range n {
			batch = append(batch, fmt.Sprintf("%c-%s-%03d", 'a'+i%2, tag, i))
		}
		if err := ts.AddElementList(ms, batch); err != nil {
			t.Fatal(err)
		}
		if keep {
			kept = append(kept, batch...)
		}
	}
	for step := range 3 {
		add(at(time.Duration(step)*time.Minute), fmt.Sprintf("early%d", step), 40, true)
		if err := ts.AdvanceWatermark(at(time.Duration(step)*time.Minute + time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// The window ends; late data within the 10 minutes of lateness.
	if err := ts.AdvanceWatermark(at(time.Hour + time.Minute)); err != nil {
		t.Fatal(err)
	}
	add(at(30*time.Minute), "late", 30, true)
	// The window expires; data later than that is dropped.
	if err := ts.AdvanceWatermark(at(time.Hour + 20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	add(at(40*time.Minute), "dropped", 25, false)
	if err := ts.AdvanceWatermarkToInfinity(); err != nil {
		t.Fatal(err)
	}

	p, s := beam.NewPipelineWithRoot()
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Hour), teststream.Create(s, ts),
		beam.Trigger(trigger.AfterEndOfWindow().
			EarlyFiring(trigger.Repeat(trigger.AfterCount(40))).
			LateFiring(trigger.Repeat(trigger.AfterCount(1)))),
		beam.AllowedLateness(10*time.Minute), beam.PanesDiscard())
	cfg := testConfig(bucket, "win")
	cfg.Shards = 1
	cfg.Destination = firstLetter
	cfg.CompletionMarker = MarkerManifest
	written, windows := WriteWindows(s, windowed, cfg)
	collect(t, s, written)
	collectWindows(t, s, windows)
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	// The sink counts what it received and what it wrote: the difference
	// is what Beam dropped as later than the window's expiry.
	n := counters(pr)
	if n["records_written"] != int64(len(kept)) || n["records_received"]-n["records_written"] != 25 {
		t.Errorf("records_received %d, records_written %d; want %d written and the 25 beyond the lateness counted as received, not written",
			n["records_received"], n["records_written"], len(kept))
	}

	c := testClient()
	objs := s3test.Objects(t, c, bucket, "win/")
	const win = "20240601T000000Z-20240601T010000Z"
	var got []string
	files := map[string][]string{} // by destination
	for k, v := range objs {
		if ownkeys.IsMarker("win", k) {
			continue
		}
		dest, w, ok := ownkeys.ParseFileKey("win", k)
		if !ok || w != win {
			t.Fatalf("unexpected object %s", k)
		}
		files[dest] = append(files[dest], k)
		got = append(got, lines(t, k, v)...)
	}
	sameMultiset(t, got, kept)
	panes := map[string]bool{}
	for _, r := range results(t) {
		panes[fmt.Sprint(r.Pane)] = true
	}
	if len(panes) < 3 {
		t.Errorf("panes %v; want early, on-time and late ones", panes)
	}
	for _, dest := range []string{"letter=a", "letter=b"} {
		var listed []string
		for _, e := range manifestOf(t, bucket, "win", dest, win) {
			listed = append(listed, e.Key)
			if int64(len(objs[e.Key])) != e.Size {
				t.Errorf("the manifest lists %s with %d bytes, it has %d", e.Key, e.Size, len(objs[e.Key]))
			}
		}
		slices.Sort(files[dest])
		if !slices.Equal(listed, files[dest]) {
			t.Errorf("the manifest of %s lists %v; the partition holds %v", dest, listed, files[dest])
		}
	}
	var all []string
	for _, keys := range files {
		all = append(all, keys...)
	}
	slices.Sort(all)
	checkWindows(t, map[string][]string{win: all})
	markers := 0
	for k, v := range objs {
		if !ownkeys.IsMarker("win", k) {
			continue
		}
		markers++
		if k != ownkeys.MarkerKey("win", win, 0) {
			t.Errorf("marker %s; want one per window, %s", k, ownkeys.MarkerKey("win", win, 0))
		}
		if n := strings.Count(string(v), "\n"); n != len(files["letter=a"])+len(files["letter=b"]) {
			t.Errorf("the marker lists %d files, the window has %d", n, len(files["letter=a"])+len(files["letter=b"]))
		}
	}
	if markers != 1 {
		t.Errorf("%d completion markers; want 1", markers)
	}
	checkClean(t, c, bucket)
}

// TestUnknownBoundedness: where Beam hides whether the input is bounded, the
// sink takes it as unbounded: no run-wide barrier, a manifest per window
// and partition when the window expires, FileResults in their windows, and
// a line in the log that says so.
func TestUnknownBoundedness(t *testing.T) {
	defer func(f func(beam.Scope, beam.PCollection) (bool, bool)) { inputBoundedness = f }(inputBoundedness)
	inputBoundedness = func(beam.Scope, beam.PCollection) (bool, bool) { return false, false }
	bucket := srv.Bucket(t)
	in := minuteEvents(600, 31)
	st, err := testConfig(bucket, "hidden").settings()
	if err != nil {
		t.Fatal(err)
	}
	_, s := beam.NewPipelineWithRoot()
	if applies, why := barrierApplies(st, s, beam.Create(s, "x")); applies || !strings.Contains(why, "hides whether the input is bounded") {
		t.Errorf("barrierApplies = %v, %q; want no barrier", applies, why)
	}
	logged := captureLogs(t)
	if _, err := windowedRun(t, bucket, "hidden", in); err != nil {
		t.Fatal(err)
	}
	// Write says, while the pipeline is built, which guarantee applies.
	want := "s3://" + bucket + "/hidden/: this Beam release hides whether the input is bounded, so a rerun that would change a file is refused file by file at commit"
	if !slices.ContainsFunc(logged.lines(), func(l string) bool { return strings.Contains(l, want) }) {
		t.Errorf("no log line says %q; logged:\n%s", want, strings.Join(logged.lines(), "\n"))
	}
	c := testClient()
	perWindow := map[string][]string{}
	for k := range s3test.Objects(t, c, bucket, "hidden/") {
		if _, w, ok := ownkeys.ParseFileKey("hidden", k); ok {
			perWindow[w] = append(perWindow[w], k)
		}
	}
	if len(perWindow) < 3 {
		t.Fatalf("files in %d windows; want 3", len(perWindow))
	}
	for w, keys := range perWindow {
		var listed []string
		for _, e := range manifestOf(t, bucket, "hidden", "", w) {
			listed = append(listed, e.Key)
		}
		slices.Sort(keys)
		if !slices.Equal(listed, keys) {
			t.Errorf("the manifest of window %s lists %v; the window has %v", w, listed, keys)
		}
	}
	seen := windowsSeen(t)
	if len(seen) == 0 {
		t.Fatal("no FileResult seen")
	}
	for key, w := range seen {
		if w == "global" {
			t.Errorf("the FileResult of %s came out in the global window: the barrier ran", key)
		}
	}
}
