package icebergtable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// smallFiles writes recs into the run's folder as Parquet files of at most
// perFile records each, one partition per file (dest: nil for none), with
// parquet-go's writer of the record type (the sink's schema), and returns
// them as the sink reports files. Tests that need hundreds of small files
// use it: one sink.Write per file would take minutes.
func smallFiles(t testing.TB, c *s3.Client, tbl *Table, runID string, recs []event, perFile int, dest func(event) (string, error)) []sink.FileResult {
	t.Helper()
	bucket, prefix, err := tbl.RunFolder(runID)
	if err != nil {
		t.Fatal(err)
	}
	byDest := map[string][]event{}
	for _, r := range recs {
		d := ""
		if dest != nil {
			if d, err = dest(r); err != nil {
				t.Fatal(err)
			}
		}
		byDest[d] = append(byDest[d], r)
	}
	var out []sink.FileResult
	for _, d := range slices.Sorted(maps.Keys(byDest)) {
		rs := byDest[d]
		for i := 0; i < len(rs); i += perFile {
			chunk := rs[i:min(i+perFile, len(rs))]
			var buf bytes.Buffer
			w := parquet.NewGenericWriter[event](&buf, parquet.Compression(&parquet.Snappy))
			if _, err := w.Write(chunk); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("%s/%s/part-%05d.parquet", prefix, d, i/perFile)
			if d == "" {
				key = fmt.Sprintf("%s/part-%05d.parquet", prefix, i/perFile)
			}
			if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(buf.Bytes())}); err != nil {
				t.Fatal(err)
			}
			pf, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			r := footerResult(pf, int64(buf.Len()))
			r.Bucket, r.Key, r.Destination, r.Window, r.SubBatches = bucket, key, d, "global", 1
			out = append(out, r)
		}
	}
	return out
}

// appendSmall commits recs as run runID in files of perFile records,
// partitioned by day.
func appendSmall(t testing.TB, c *s3.Client, tbl *Table, runID string, recs []event, perFile int) []sink.FileResult {
	t.Helper()
	files := smallFiles(t, c, tbl, runID, recs, perFile, eventDay)
	if res, err := tbl.Commit(context.Background(), runID, "global", files); err != nil || !res.Added {
		t.Fatalf("run %s: %+v, %v", runID, res, err)
	}
	return files
}

// openByDay opens (or creates) lake.events partitioned by day(At).
func openByDay(t testing.TB, cat catalog.Catalog) *Table {
	t.Helper()
	tbl, err := Open(context.Background(), cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "", byDay...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// compactCheck is what the independent compaction check found.
type compactCheck struct {
	live       []string // the current snapshot's data files
	records    int64
	compaction map[string]int // compaction id → its snapshots in main's ancestry
}

// checkCompacted reads the table as it is in the bucket, as
// checkFaultTable does (the metadata file decoded as JSON, iceberg-go's
// Avro decoders for manifest lists and manifests, not its scan), and
// reads every live data file with parquet-go: the IDs of the live files'
// records must be exactly ids (each once), each live entry's record count
// the file's rows, no file live twice, and every manifest list and
// manifest any snapshot names, and every data file a snapshot holds live
// (an entry added or existing, not a deleted one's tombstone), must exist.
func checkCompacted(ctx context.Context, c *s3.Client, cat catalog.Catalog, ids []int64) (compactCheck, error) {
	var rep compactCheck
	md, err := readMetadataFile(ctx, c, cat)
	if err != nil {
		return rep, err
	}
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	byID := map[int64]int{}
	for i, s := range md.Snapshots {
		byID[s.SnapshotID] = i
	}
	main := md.Refs["main"].SnapshotID
	rep.compaction = map[string]int{}
	for id := main; ; {
		i, ok := byID[id]
		if !ok {
			// A parent that expiry removed ends the ancestry; main's own
			// snapshot must be held.
			if id == main {
				fail("main names snapshot %d, which the metadata does not hold", id)
			}
			break
		}
		if cid := md.Snapshots[i].Summary[PropCompactionID]; cid != "" {
			rep.compaction[cid]++
		}
		if md.Snapshots[i].ParentID == nil {
			break
		}
		id = *md.Snapshots[i].ParentID
	}
	live := map[string]int64{}
	referenced := map[string]bool{}
	for _, s := range md.Snapshots {
		list, err := getObject(ctx, c, s.ManifestList)
		if err != nil {
			fail("snapshot %d: its manifest list: %v", s.SnapshotID, err)
			continue
		}
		manifests, err := iceberg.ReadManifestList(bytes.NewReader(list))
		if err != nil {
			fail("snapshot %d: %v", s.SnapshotID, err)
			continue
		}
		for _, m := range manifests {
			raw, err := getObject(ctx, c, m.FilePath())
			if err != nil {
				fail("snapshot %d: manifest: %v", s.SnapshotID, err)
				continue
			}
			entries, err := iceberg.ReadManifest(m, bytes.NewReader(raw), false)
			if err != nil {
				fail("manifest %s: %v", m.FilePath(), err)
				continue
			}
			for _, e := range entries {
				if e.Status() == iceberg.EntryStatusDELETED {
					// A tombstone: the snapshot removed this file, and no
					// reader of it opens the file (orphan removal may
					// delete it once no kept snapshot holds it live).
					continue
				}
				path := e.DataFile().FilePath()
				referenced[path] = true
				if s.SnapshotID == main {
					if _, twice := live[path]; twice {
						fail("%s is live twice", path)
					}
					live[path] = e.DataFile().Count()
				}
			}
		}
	}
	got := map[int64]int{}
	for _, path := range slices.Sorted(maps.Keys(live)) {
		rep.live = append(rep.live, path)
		b, err := getObject(ctx, c, path)
		if err != nil {
			fail("live data file %s: %v", path, err)
			continue
		}
		recs, err := parquet.Read[event](bytes.NewReader(b), int64(len(b)))
		if err != nil {
			fail("read %s: %v", path, err)
			continue
		}
		if int64(len(recs)) != live[path] {
			fail("%s holds %d records, its entry says %d", path, len(recs), live[path])
		}
		for _, r := range recs {
			got[r.ID]++
		}
		rep.records += int64(len(recs))
	}
	for _, id := range ids {
		if got[id] != 1 {
			fail("record %d is in the table %d times", id, got[id])
		}
		delete(got, id)
	}
	if len(got) > 0 {
		fail("the table holds %d records of no run (e.g. %d)", len(got), slices.Sorted(maps.Keys(got))[0])
	}
	for _, path := range slices.Sorted(maps.Keys(referenced)) {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(path, "s3://"), "/")
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			fail("data file %s, named by a snapshot, is gone: %v", path, err)
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
		}
		return rep, errors.New(strings.Join(problems, "\n"))
	}
	return rep, nil
}

func idsOf(recs ...[]event) []int64 {
	var out []int64
	for _, rs := range recs {
		for _, r := range rs {
			out = append(out, r.ID)
		}
	}
	return out
}

// inCompacted counts the live files under a compaction's folder.
func inCompacted(live []string, id string) int {
	n := 0
	for _, p := range live {
		if strings.Contains(p, "/compacted/"+id+"/") {
			n++
		}
	}
	return n
}

// TestCompact: a table partitioned by day whose three partitions hold
// many small files (written by sink.Write, 16 shards) is compacted into
// fewer files, one replace snapshot carrying the id, every record once
// (the independent check); the new files' metrics come from their
// footers; a rerun with the same id adds nothing, and a partition with
// fewer than MinFiles small files is left alone.
func TestCompact(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	client := srv.Client(s3test.ClientOptions{})
	cat := newCatalog(t, bucket)
	tbl := openByDay(t, cat)
	recs := spread(1000)
	rs := writeRun(t, tbl, "run-1", recs, func(c *sink.Config) { c.Destination = eventDay; c.Shards = 16 })
	if _, err := tbl.Commit(ctx, "run-1", "global", rs); err != nil {
		t.Fatal(err)
	}
	// A fourth day with two files: under MinFiles, left alone.
	late := events(5000, 40)
	for i := range late {
		late[i].At = time.Date(2024, 6, 9, 1, 0, 0, i, time.UTC)
	}
	lateFiles := appendSmall(t, client, tbl, "run-2", late, 20)
	before := len(snapshots(t, cat))
	filesBefore := dataFiles(t, cat)

	m, err := OpenForMaintenance(ctx, cat, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	rep, err := m.Compact(ctx, Compaction{ID: "c-1"})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	if rep.Landed || rep.SnapshotID == 0 || rep.Partitions != 3 || rep.FilesRead != len(rs) || rep.FilesWritten != 3 || rep.Refused != 0 {
		t.Fatalf("report %+v: want the %d files of 3 partitions rewritten into 3, no refused round", rep, len(rs))
	}
	chk, err := checkCompacted(ctx, client, cat, idsOf(recs, late))
	if err != nil {
		t.Fatal(err)
	}
	if chk.compaction["c-1"] != 1 || len(chk.live) != 3+len(lateFiles) || inCompacted(chk.live, "c-1") != 3 {
		t.Fatalf("after compaction: %d live files (%d compacted), compaction snapshots %v; want 3 compacted and the late day's %d", len(chk.live), inCompacted(chk.live, "c-1"), chk.compaction, len(lateFiles))
	}
	snaps := snapshots(t, cat)
	if len(snaps) != before+1 || snaps[len(snaps)-1].Summary.Properties[PropCompactionID] != "c-1" {
		t.Fatalf("%d snapshots after compaction (before %d), want one more, carrying the id", len(snaps), before)
	}
	wantIDs(t, cat, [2]int{0, 1000}, [2]int{5000, 40}) // iceberg-go's scan too
	loaded, _ := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	for _, df := range snapshotDataFiles(t, loaded) {
		if strings.Contains(df.FilePath(), "/compacted/") && (len(df.LowerBoundValues()) == 0 || len(df.ValueCounts()) == 0 || len(df.SplitOffsets()) == 0) {
			t.Errorf("%s: no metrics from its footer (bounds %d, counts %d, offsets %d)", df.FilePath(), len(df.LowerBoundValues()), len(df.ValueCounts()), len(df.SplitOffsets()))
		}
	}

	again, err := m.Compact(ctx, Compaction{ID: "c-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Landed || again.SnapshotID != rep.SnapshotID || len(snapshots(t, cat)) != before+1 {
		t.Fatalf("a rerun: %+v; want it found landed in snapshot %d, nothing added", again, rep.SnapshotID)
	}

	// Its snapshot expired (one more append, then only the newest kept):
	// a late rerun finds the outputs live and adds nothing.
	later := events(7000, 10)
	for i := range later {
		later[i].At = time.Date(2024, 6, 10, 1, 0, 0, i, time.UTC)
	}
	appendSmall(t, client, tbl, "run-3", later, 10)
	if _, err := m.ExpireSnapshots(ctx, Expiry{RetainLast: 1}); err != nil {
		t.Fatal(err)
	}
	for _, s := range snapshots(t, cat) {
		if s.Summary != nil && s.Summary.Properties[PropCompactionID] == "c-1" {
			t.Fatal("the compaction's snapshot is still in the table after expiry")
		}
	}
	kept := len(snapshots(t, cat))
	late2, err := m.Compact(ctx, Compaction{ID: "c-1"})
	if err != nil {
		t.Fatalf("a rerun after its snapshot expired: %v", err)
	}
	if !late2.Landed || len(snapshots(t, cat)) != kept {
		t.Fatalf("a rerun after its snapshot expired: %+v, %d snapshots (was %d); want it found landed, nothing added", late2, len(snapshots(t, cat)), kept)
	}
	t.Logf("%d files in 3 partitions (and 2 late) → %d live files; %d bytes rewritten in %v; a rerun added nothing, before and after expiry", filesBefore, len(chk.live), rep.BytesRewritten, took.Round(time.Millisecond))
}

// TestCompactBesideAppender: an append lands between the compaction's
// read and its commit: the compaction's first round is refused, it
// reloads, finds its inputs still live and commits again without writing
// anything more; the appended files stay live, untouched, and every
// record is in the table once.
func TestCompactBesideAppender(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	client := srv.Client(s3test.ClientOptions{})
	cat := newCatalog(t, bucket)
	tbl := openByDay(t, cat)
	first := spread(300)
	appendSmall(t, client, tbl, "run-1", first, 10)
	second := spread(600)[300:]
	var appended []sink.FileResult
	m := openByDay(t, cat)
	written := 0
	m.onStep = func(step string, _ int) {
		if step == "written" {
			written++
		}
	}
	m.beforeCommit = func() {
		if appended == nil {
			appended = appendSmall(t, client, tbl, "run-2", second, 10)
		}
	}
	rep, err := m.Compact(ctx, Compaction{ID: "c-1"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Refused != 1 || written != rep.FilesWritten {
		t.Fatalf("report %+v, %d files written: want one refused round and each file written once", rep, written)
	}
	chk, err := checkCompacted(ctx, client, cat, idsOf(first, second))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range appended {
		if !slices.Contains(chk.live, "s3://"+f.Bucket+"/"+f.Key) {
			t.Errorf("the appended file %s is not live after the compaction", f.Key)
		}
	}
	if chk.compaction["c-1"] != 1 {
		t.Errorf("compaction snapshots %v, want c-1 once", chk.compaction)
	}
	t.Logf("report %+v; %d live files", rep, len(chk.live))
}

// TestCompactVoidLeavesOnlyOrphans: compaction A loses to compaction B,
// which replaced the same files first: A's round is refused and its plan
// void (ErrCompactionVoid), the table unchanged by it. Its written files
// and the refused round's staged metadata are then orphans, which orphan
// removal (its Now in the future) deletes: afterwards every object under
// the table's location is referenced, s3once's bookkeeping, or in a run
// folder.
func TestCompactVoidLeavesOnlyOrphans(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	client := srv.Client(s3test.ClientOptions{})
	cat := newCatalog(t, bucket)
	tbl := openByDay(t, cat)
	recs := spread(300)
	appendSmall(t, client, tbl, "run-1", recs, 10)
	a := openByDay(t, cat)
	var bRep CompactionReport
	a.beforeCommit = func() {
		if bRep.SnapshotID == 0 {
			var err error
			if bRep, err = openByDay(t, cat).Compact(ctx, Compaction{ID: "c-b"}); err != nil {
				t.Error(err)
			}
		}
	}
	_, err := a.Compact(ctx, Compaction{ID: "c-a"})
	if !errors.Is(err, ErrCompactionVoid) {
		t.Fatalf("compaction a after b replaced its files: %v, want ErrCompactionVoid", err)
	}
	chk, err := checkCompacted(ctx, client, cat, idsOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	if chk.compaction["c-a"] != 0 || chk.compaction["c-b"] != 1 {
		t.Fatalf("compaction snapshots %v: want b's only", chk.compaction)
	}
	aFiles := 0
	for key := range sizes(t, bucket) {
		if strings.Contains(key, "/compacted/c-a/part") || strings.Contains(key, "/compacted/c-a/At_day") {
			aFiles++
		}
	}
	if aFiles == 0 {
		t.Fatal("compaction a wrote no file: the test proves nothing")
	}
	orep, err := openByDay(t, cat).RemoveOrphans(ctx, Orphans{Now: later()})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := loaded.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := referencedFiles(loaded, fsys)
	if err != nil {
		t.Fatal(err)
	}
	root := bucket + "/"
	if m := openByDay(t, cat); m.path != "" {
		root += m.path + "/"
	}
	for key := range sizes(t, bucket) {
		rel, below := strings.CutPrefix(bucket+"/"+key, root)
		if below && !refs[bucket+"/"+key] && !hiddenKey(rel) && !inRunFolder(rel, nil) {
			t.Errorf("%s is left after orphan removal: not referenced, not bookkeeping, not in a run folder", key)
		}
		if strings.Contains(key, "/compacted/c-a/") && !strings.HasSuffix(key, "/_plan") {
			t.Errorf("compaction a's file %s survived orphan removal", key)
		}
	}
	if _, err := checkCompacted(ctx, client, cat, idsOf(recs)); err != nil {
		t.Fatalf("after orphan removal: %v", err)
	}
	t.Logf("a wrote %d files; orphan removal deleted %d files", aFiles, len(orep.Deleted))
}

// compactFigureEnv runs TestCompactThousandFiles (make soak).
const compactFigureEnv = "S3ONCE_ICEBERG_COMPACT_FIGURE"

// TestCompactThousandFiles is the figure: one partition of 1,000 small
// files compacts to at least 10x fewer, every record once. Only with
// S3ONCE_ICEBERG_COMPACT_FIGURE=1 (make soak).
func TestCompactThousandFiles(t *testing.T) {
	if os.Getenv(compactFigureEnv) != "1" {
		t.Skip("the 1,000-file figure: set " + compactFigureEnv + "=1 (make soak)")
	}
	ctx := context.Background()
	bucket := srv.Bucket(t)
	client := srv.Client(s3test.ClientOptions{})
	cat := newCatalog(t, bucket)
	tbl := openByDay(t, cat)
	recs := events(0, 100_000) // 1,000 files of 100 records, all on 2024-06-01 or -02
	for i := range recs {
		recs[i].At = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 100 * time.Millisecond)
	}
	files := appendSmall(t, client, tbl, "run-1", recs, 100)
	if len(files) < 1000 {
		t.Fatalf("%d files, want 1,000", len(files))
	}
	began := time.Now()
	rep, err := openByDay(t, cat).Compact(ctx, Compaction{ID: "figure", TargetFileBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	chk, err := checkCompacted(ctx, client, cat, idsOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	if len(chk.live)*10 > len(files) {
		t.Fatalf("%d files → %d: want at least 10x fewer", len(files), len(chk.live))
	}
	t.Logf("figure: %d files → %d (%.0fx fewer); %d bytes rewritten in %v; %s", len(files), len(chk.live), float64(len(files))/float64(len(chk.live)), rep.BytesRewritten, took.Round(time.Millisecond), strconv.Itoa(int(chk.records))+" records, each once")
}
