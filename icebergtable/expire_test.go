package icebergtable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/tablemarker"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// landedRun is a run written and committed in a test.
type landedRun struct {
	id    string
	files []sink.FileResult
	res   Result
}

// commitRuns writes and commits one run of n records per id, the i-th
// from i*10,000 on, and returns them with the records' ranges.
func commitRuns(t *testing.T, tbl *Table, n int, ids ...string) ([]landedRun, [][2]int) {
	t.Helper()
	var runs []landedRun
	var ranges [][2]int
	for i, id := range ids {
		rs := writeRun(t, tbl, id, events(i*10_000, n))
		res, err := tbl.Commit(context.Background(), id, "global", rs)
		if err != nil || !res.Added {
			t.Fatalf("run %s: %+v, %v", id, res, err)
		}
		runs = append(runs, landedRun{id, rs, res})
		ranges = append(ranges, [2]int{i * 10_000, n})
	}
	return runs, ranges
}

// expire expires the table's snapshots beyond the newest keep, whatever
// their age, through a handle of its own (as a maintenance program would).
func expire(t *testing.T, cat catalog.Catalog, keep int) ExpiryReport {
	t.Helper()
	rep, err := openTable(t, cat).ExpireSnapshots(context.Background(), Expiry{RetainLast: keep})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// dataFiles is the number of data files the table's current snapshot
// holds.
func dataFiles(t *testing.T, cat catalog.Catalog) int {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// readMarkerObject reads a run window's commit marker from the bucket.
func readMarkerObject(t *testing.T, tbl *Table, runID string) (tablemarker.Marker, bool) {
	t.Helper()
	bucket, prefix, _ := tbl.RunFolder(runID)
	out, err := srv.Client(s3test.ClientOptions{}).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(tablemarker.Key(prefix, "global"))})
	if err != nil {
		return tablemarker.Marker{}, false
	}
	defer out.Body.Close()
	body := make([]byte, tablemarker.MaxBytes)
	n, _ := out.Body.Read(body)
	m, err := tablemarker.Decode(body[:n])
	if err != nil {
		t.Fatal(err)
	}
	return m, true
}

// A run's snapshot expired: a late retry of its run id with the same files
// is recognized as landed (the commit marker is the record), adds no
// snapshot and nothing twice; with other files it is refused. The retry
// runs on the writer's own handle, which remembered the table before the
// expiry.
func TestRetryAfterExpiry(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	runs, ranges := commitRuns(t, tbl, 400, "run-a", "run-b", "run-c")
	files := 0
	for _, r := range runs {
		files += len(r.files)
	}
	rep := expire(t, cat, 1)
	if !slices.Equal(rep.Expired, sorted(runs[0].res.SnapshotID, runs[1].res.SnapshotID)) || rep.Kept != 1 || rep.MarkersWritten != 0 {
		t.Fatalf("expiry: %+v, want run-a's and run-b's snapshots expired, 1 kept, no marker missing", rep)
	}

	for _, retry := range []*Table{tbl, openTable(t, cat)} {
		res, err := retry.Commit(ctx, "run-a", "global", runs[0].files)
		if err != nil {
			t.Fatal(err)
		}
		if res.Added || res.SnapshotID != runs[0].res.SnapshotID || res.Files != len(runs[0].files) {
			t.Errorf("a late retry of run-a: %+v, want it recognized as landed in snapshot %d", res, runs[0].res.SnapshotID)
		}
	}
	if _, err := tbl.Commit(ctx, "run-b", "global", runs[1].files[1:]); !errors.Is(err, ErrRunChanged) || !strings.Contains(err.Error(), fmt.Sprint(runs[1].res.SnapshotID)) {
		t.Errorf("a late retry of run-b with other files: %v, want ErrRunChanged naming snapshot %d", err, runs[1].res.SnapshotID)
	}
	if n := len(snapshots(t, cat)); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
	if n := dataFiles(t, cat); n != files {
		t.Errorf("%d data files, want %d", n, files)
	}
	wantIDs(t, cat, ranges...)
}

func sorted(ids ...int64) []int64 { slices.Sort(ids); return ids }

// A run whose commit marker is missing (the writer died after the commit):
// expiry writes the marker from the snapshot's summary before it expires
// the snapshot, and the late retry is still recognized.
func TestExpiryWritesMissingMarker(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	runs, ranges := commitRuns(t, tbl, 300, "lost-marker", "later")
	_, prefix, _ := tbl.RunFolder("lost-marker")
	if _, err := srv.Client(s3test.ClientOptions{}).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(tablemarker.Key(prefix, "global"))}); err != nil {
		t.Fatal(err)
	}
	if _, ok := readMarkerObject(t, tbl, "lost-marker"); ok {
		t.Fatal("the marker is still there")
	}
	rep := expire(t, cat, 1)
	if rep.MarkersWritten != 1 || len(rep.Expired) != 1 {
		t.Fatalf("expiry: %+v, want one snapshot expired and its marker written", rep)
	}
	m, ok := readMarkerObject(t, tbl, "lost-marker")
	if !ok || m.SnapshotID != runs[0].res.SnapshotID || m.Files != len(runs[0].files) || m.Table != "lake.events" || m.FilesSHA256 != filesDigest(mustRunFiles(t, tbl, "lost-marker", runs[0].files)) {
		t.Fatalf("the marker expiry wrote: %+v (found %v), want run lost-marker's snapshot %d", m, ok, runs[0].res.SnapshotID)
	}
	res, err := tbl.Commit(ctx, "lost-marker", "global", runs[0].files)
	if err != nil || res.Added || res.SnapshotID != runs[0].res.SnapshotID {
		t.Errorf("a late retry: %+v, %v, want it recognized as landed in snapshot %d", res, err, runs[0].res.SnapshotID)
	}
	wantIDs(t, cat, ranges...)
}

func mustRunFiles(t *testing.T, tbl *Table, runID string, rs []sink.FileResult) []sink.FileResult {
	t.Helper()
	bucket, prefix, _ := tbl.RunFolder(runID)
	files, err := runFiles(bucket, prefix, rs)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// listBucket lists every object in the bucket.
func listBucket(t *testing.T, bucket string) []types.Object {
	t.Helper()
	var out []types.Object
	p := s3.NewListObjectsV2Paginator(srv.Client(s3test.ClientOptions{}), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Contents...)
	}
	return out
}

// objects lists every key in the bucket with its ETag.
func objects(t *testing.T, bucket string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range listBucket(t, bucket) {
		out[aws.ToString(o.Key)] = aws.ToString(o.ETag)
	}
	return out
}

// setRef points a branch or tag at a snapshot, with a max-ref-age-ms
// (0: none).
func setRef(t *testing.T, cat catalog.Catalog, name string, kind table.RefType, id, maxRefAgeMs int64) {
	t.Helper()
	ident := table.Identifier{"lake", "events"}
	if _, _, err := cat.CommitTable(context.Background(), ident, nil, []table.Update{table.NewSetSnapshotRefUpdate(name, id, kind, maxRefAgeMs, 0, 0)}); err != nil {
		t.Fatal(err)
	}
}

// Expiry keeps the current snapshot, main's newest N and every snapshot a
// tag points at, and deletes no object (every object before is there
// after, unchanged); a table whose retention would drop a tag is refused,
// expiring nothing.
func TestExpiryKeepsAndDeletesNothing(t *testing.T) {
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	runs, ranges := commitRuns(t, tbl, 200, "r0", "r1", "r2", "r3", "r4")
	setRef(t, cat, "audit", table.TagRef, runs[1].res.SnapshotID, 0)
	before := objects(t, bucket)

	rep := expire(t, cat, 2)
	if want := sorted(runs[0].res.SnapshotID, runs[2].res.SnapshotID); !slices.Equal(rep.Expired, want) || rep.Kept != 3 {
		t.Errorf("expiry: %+v, want snapshots %v expired (r0 and r2), 3 kept (r1 tagged, r3, r4)", rep, want)
	}
	kept := map[int64]bool{}
	for _, s := range snapshots(t, cat) {
		kept[s.SnapshotID] = true
	}
	for _, i := range []int{1, 3, 4} {
		if !kept[runs[i].res.SnapshotID] {
			t.Errorf("run r%d's snapshot %d was expired", i, runs[i].res.SnapshotID)
		}
	}
	after := objects(t, bucket)
	for key, etag := range before {
		if after[key] != etag {
			t.Errorf("s3://%s/%s was deleted or changed by expiry", bucket, key)
		}
	}
	if len(after) <= len(before) {
		t.Errorf("%d objects after, %d before: want the new metadata file", len(after), len(before))
	}
	wantIDs(t, cat, ranges...)

	setRef(t, cat, "stale", table.TagRef, runs[3].res.SnapshotID, 1)
	n := len(snapshots(t, cat))
	_, err := tbl.ExpireSnapshots(context.Background(), Expiry{RetainLast: 1})
	if err == nil || !strings.Contains(err.Error(), `"stale"`) {
		t.Errorf("expiry that would drop the tag stale: %v, want a refusal naming it", err)
	}
	if m := len(snapshots(t, cat)); m != n {
		t.Errorf("%d snapshots after a refused expiry, want %d", m, n)
	}
	if _, err := tbl.ExpireSnapshots(context.Background(), Expiry{}); err == nil {
		t.Error("expiry keeping no snapshot was not refused")
	}
}

// rollback points main back at a snapshot.
func rollback(t *testing.T, cat catalog.Catalog, id int64) {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.RollbackToSnapshot(id); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A table rolled back past a run: a retry of the run while its snapshot is
// kept appends it again (the operator rolled it back) and its marker is
// rewritten to name the new snapshot; once that run's rolled-back
// snapshot is expired, nothing changes for it. A run rolled back and then
// expired before any retry counts as landed: the retry appends nothing.
func TestRetryAfterRollback(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	runs, ranges := commitRuns(t, tbl, 300, "base", "rolled", "gone")

	rollback(t, cat, runs[0].res.SnapshotID)
	res, err := tbl.Commit(ctx, "rolled", "global", runs[1].files)
	if err != nil || !res.Added || res.SnapshotID == runs[1].res.SnapshotID {
		t.Fatalf("a retry after the rollback: %+v, %v, want the run appended again as a new snapshot", res, err)
	}
	if m, ok := readMarkerObject(t, tbl, "rolled"); !ok || m.SnapshotID != res.SnapshotID {
		t.Errorf("the marker after the retry: %+v (found %v), want it naming snapshot %d", m, ok, res.SnapshotID)
	}
	wantIDs(t, cat, ranges[0], ranges[1])

	// Expire every snapshot not in main's newest 1 (the rolled-back ones
	// included), then retry both runs.
	rep := expire(t, cat, 1)
	if !slices.Contains(rep.Expired, runs[1].res.SnapshotID) || !slices.Contains(rep.Expired, runs[2].res.SnapshotID) {
		t.Fatalf("expiry: %+v, want the rolled-back snapshots %d and %d expired", rep, runs[1].res.SnapshotID, runs[2].res.SnapshotID)
	}
	again, err := tbl.Commit(ctx, "rolled", "global", runs[1].files)
	if err != nil || again.Added || again.SnapshotID != res.SnapshotID {
		t.Errorf("a second retry: %+v, %v, want snapshot %d found", again, err, res.SnapshotID)
	}
	gone, err := tbl.Commit(ctx, "gone", "global", runs[2].files)
	if err != nil || gone.Added || gone.SnapshotID != runs[2].res.SnapshotID {
		t.Errorf("a retry of a run rolled back and expired: %+v, %v, want it counted as landed in snapshot %d", gone, err, runs[2].res.SnapshotID)
	}
	wantIDs(t, cat, ranges[0], ranges[1])
}
