package icebergtable

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/tablemarker"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// later is a time past the default safety age of every object a test
// writes now: RemoveOrphans measures age from it instead of a test
// waiting.
func later() time.Time { return time.Now().Add(DefaultOrphanAge + time.Hour) }

// sizes lists every key in the bucket with its size.
func sizes(t *testing.T, bucket string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, o := range listBucket(t, bucket) {
		out[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
	}
	return out
}

// bookkeeping is the bucket's s3once objects: keys with a segment starting
// with '_'. It fails the test unless a settings marker, a partition
// manifest and a table commit marker are among them.
func bookkeeping(t *testing.T, bucket string) []string {
	t.Helper()
	var keys []string
	for key := range sizes(t, bucket) {
		if strings.Contains("/"+key, "/_") {
			keys = append(keys, key)
		}
	}
	for _, name := range []string{ownkeys.SettingsName, ownkeys.ManifestName, tablemarker.Name} {
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "/"+name) }) {
			t.Fatalf("no %s among the bucket's objects %v", name, keys)
		}
	}
	slices.Sort(keys)
	return keys
}

// put writes an object of n bytes.
func put(t *testing.T, bucket, key string, n int) {
	t.Helper()
	if _, err := srv.Client(s3test.ClientOptions{}).PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(strings.Repeat("x", n)),
	}); err != nil {
		t.Fatal(err)
	}
}

// referencedExist checks, with the S3 client, that every file the table's
// metadata names exists: the metadata files of the log, and for every
// snapshot the table keeps its manifest list, its manifests and their
// live data files. It returns how many data files it checked.
func referencedExist(t *testing.T, cat catalog.Catalog, bucket string) int {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	have := sizes(t, bucket)
	check := func(what, uri string) {
		b, key, err := splitS3(uri)
		if err != nil || b != bucket {
			t.Fatalf("%s %s is not in the bucket %s", what, uri, bucket)
		}
		if _, ok := have[key]; !ok {
			t.Errorf("%s %s, which the table references, is gone", what, uri)
		}
	}
	check("the metadata file", tbl.MetadataLocation())
	for e := range tbl.Metadata().PreviousFiles() {
		check("the earlier metadata file", e.MetadataFile)
	}
	data := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		check("the manifest list", snap.ManifestList)
		manifests, err := snap.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range manifests {
			check("the manifest", m.FilePath())
			entries, err := m.FetchEntries(fsys, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				check("the data file", e.DataFile().FilePath())
				data[e.DataFile().FilePath()] = true
			}
		}
	}
	return len(data)
}

func removeOrphans(t *testing.T, cat catalog.Catalog, o Orphans) OrphanReport {
	t.Helper()
	rep, err := openTable(t, cat).RemoveOrphans(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Files of a refused or in-flight commit (a manifest list, a manifest, a
// metadata file and a data file no snapshot names) and the manifest lists
// of expired snapshots are kept while younger than the safety age and
// deleted once older; s3once's markers are never deleted, every file the
// table references exists after, each record is in the table once, and a
// late retry of a run whose snapshot was expired is still recognized.
func TestOrphanRemoval(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	runs, ranges := commitRuns(t, tbl, 300, "r0", "r1", "r2")
	lists := map[string]bool{}
	for _, s := range snapshots(t, cat)[:2] {
		_, key, _ := splitS3(s.ManifestList)
		lists[key] = true
	}
	if rep := expire(t, cat, 1); len(rep.Expired) != 2 {
		t.Fatalf("expiry: %+v, want r0's and r1's snapshots expired", rep)
	}
	_, loc, _ := splitS3(tbl.Location())
	planted := []string{
		loc + "/metadata/snap-1234-1-inflight.avro",
		loc + "/metadata/inflight-m0.avro",
		loc + "/metadata/00099-inflight.metadata.json",
		loc + "/data/00000-0-inflight.parquet",
	}
	for i, key := range planted {
		put(t, bucket, key, 100+i)
	}
	marks := bookkeeping(t, bucket)

	young := removeOrphans(t, cat, Orphans{})
	if len(young.Deleted) != 0 || young.KeptYoung != len(planted)+len(lists) {
		t.Errorf("young: %+v, want nothing deleted, %d files kept as too young", young, len(planted)+len(lists))
	}
	for _, key := range planted {
		if _, ok := sizes(t, bucket)[key]; !ok {
			t.Errorf("%s was deleted while young", key)
		}
	}

	before := sizes(t, bucket)
	old := removeOrphans(t, cat, Orphans{Now: later(), AbandonRuns: []string{"r0"}})
	want := maps.Clone(lists)
	for _, key := range planted {
		want[key] = true
	}
	var wantURIs []string
	var wantBytes int64
	for key := range want {
		wantURIs = append(wantURIs, "s3://"+bucket+"/"+key)
		wantBytes += before[key]
	}
	slices.Sort(wantURIs)
	if !slices.Equal(old.Deleted, wantURIs) || old.DeletedBytes != wantBytes || old.KeptYoung != 0 || old.KeptBookkeeping != len(marks) {
		t.Errorf("old: %+v\nwant deleted %v (%d bytes), %d bookkeeping objects kept", old, wantURIs, wantBytes, len(marks))
	}
	after := sizes(t, bucket)
	for key := range want {
		if _, ok := after[key]; ok {
			t.Errorf("%s is still there", key)
		}
	}
	if got := bookkeeping(t, bucket); !slices.Equal(got, marks) {
		t.Errorf("s3once's objects after: %v, want %v", got, marks)
	}
	files := 0
	for _, r := range runs {
		files += len(r.files)
	}
	if n := referencedExist(t, cat, bucket); n != files {
		t.Errorf("%d data files referenced, want %d", n, files)
	}
	wantIDs(t, cat, ranges...)

	res, err := openTable(t, cat).Commit(ctx, "r0", "global", runs[0].files)
	if err != nil || res.Added || res.SnapshotID != runs[0].res.SnapshotID {
		t.Errorf("a late retry of r0 after expiry and orphan removal: %+v, %v, want it recognized as landed in snapshot %d", res, err, runs[0].res.SnapshotID)
	}
	wantIDs(t, cat, ranges...)
	if n := len(snapshots(t, cat)); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
}

// A run that crashed before its table commit leaves committed files in its
// run folder that no snapshot names: they are kept, however old, until its
// run id is abandoned; then they are deleted and its s3once objects stay.
// Abandoning a run whose files the table holds deletes none of them.
func TestOrphanRunFolderKeptUnlessAbandoned(t *testing.T) {
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	runs, ranges := commitRuns(t, tbl, 300, "live")
	crashed := mustRunFiles(t, tbl, "crashed", writeRun(t, tbl, "crashed", events(50_000, 400)))
	marks := bookkeeping(t, bucket)

	kept := removeOrphans(t, cat, Orphans{Now: later()})
	if len(kept.Deleted) != 0 || kept.KeptRunFolder != len(crashed) {
		t.Errorf("without abandoning: %+v, want nothing deleted, the crashed run's %d files kept", kept, len(crashed))
	}
	dry := removeOrphans(t, cat, Orphans{Now: later(), AbandonRuns: []string{"crashed", "live"}, DryRun: true})
	if len(dry.Deleted) != len(crashed) || !dry.DryRun {
		t.Errorf("dry run: %+v, want the crashed run's %d files reported", dry, len(crashed))
	}
	for _, f := range crashed {
		if _, ok := sizes(t, bucket)[f.Key]; !ok {
			t.Fatalf("%s was deleted by a dry run or without abandoning its run", f.Key)
		}
	}

	gone := removeOrphans(t, cat, Orphans{Now: later(), AbandonRuns: []string{"crashed", "live"}})
	var want []string
	for _, f := range crashed {
		want = append(want, "s3://"+f.Bucket+"/"+f.Key)
	}
	slices.Sort(want)
	if !slices.Equal(gone.Deleted, want) || gone.KeptRunFolder != 0 || gone.Referenced < len(runs[0].files) {
		t.Errorf("abandoning: %+v, want exactly the crashed run's files %v deleted", gone, want)
	}
	if got := bookkeeping(t, bucket); !slices.Equal(got, marks) {
		t.Errorf("s3once's objects after: %v, want %v", got, marks)
	}
	if n := referencedExist(t, cat, bucket); n != len(runs[0].files) {
		t.Errorf("%d data files referenced, want %d", n, len(runs[0].files))
	}
	wantIDs(t, cat, ranges...)
}

// A safety age under MinOrphanAge is refused unless in a dry run, as are a
// negative age and an abandoned run id that names no run folder; a dry run
// reports and deletes nothing.
func TestOrphanRefusals(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	_, ranges := commitRuns(t, tbl, 100, "r")
	_, loc, _ := splitS3(tbl.Location())
	key := loc + "/metadata/stray.avro"
	put(t, bucket, key, 10)
	for _, o := range []Orphans{
		{OlderThan: 30 * time.Minute},
		{OlderThan: -time.Hour, DryRun: true},
		{AbandonRuns: []string{"../r"}},
	} {
		if _, err := tbl.RemoveOrphans(ctx, o); err == nil {
			t.Errorf("%+v was not refused", o)
		}
	}
	if _, ok := sizes(t, bucket)[key]; !ok {
		t.Fatal("a refused call deleted a file")
	}
	dry, err := tbl.RemoveOrphans(ctx, Orphans{OlderThan: time.Minute, DryRun: true, Now: time.Now().Add(time.Hour)})
	if err != nil || !slices.Equal(dry.Deleted, []string{"s3://" + bucket + "/" + key}) || dry.DeletedBytes != 10 {
		t.Errorf("dry run: %+v, %v, want the stray file reported", dry, err)
	}
	if _, ok := sizes(t, bucket)[key]; !ok {
		t.Error("a dry run deleted a file")
	}
	wantIDs(t, cat, ranges...)
}
