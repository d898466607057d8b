package icebergtable

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/tablemarker"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// The test server, and its endpoint (a crash loop's child is given the
// parent's endpoint and starts no server).
var (
	srv      *s3test.Server
	endpoint string
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		endpoint = os.Getenv(childEndpoint)
		os.Exit(ptest.MainRet(m))
	}
	var err error
	srv, err = s3test.Launch(s3test.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	endpoint = srv.Endpoint()
	code := ptest.MainRet(m)
	srv.Stop()
	os.Exit(code)
}

// event is the tests' record type.
type event struct {
	ID   int64
	Name string
	At   time.Time
	Note *string
}

func events(from, n int) []event {
	base := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	out := make([]event, n)
	for i := range out {
		id := int64(from + i)
		out[i] = event{ID: id, Name: fmt.Sprintf("event-%05d", id), At: base.Add(time.Duration(id)*time.Second + time.Duration(id)*time.Nanosecond)}
		if id%3 == 0 {
			note := "every third"
			out[i].Note = &note
		}
	}
	return out
}

// results collects sink.Write's FileResults by a token of the run.
var (
	resultsMu sync.Mutex
	collected = map[string][]sink.FileResult{}
)

type collectFn struct{ Token string }

func (f *collectFn) ProcessElement(r sink.FileResult) {
	resultsMu.Lock()
	collected[f.Token] = append(collected[f.Token], r)
	resultsMu.Unlock()
}

func init() {
	register.DoFn1x0[sink.FileResult](&collectFn{})
	beam.RegisterType(reflect.TypeFor[event]())
}

// writeRun writes the records as one run into the table's run folder with
// sink.Write on the embedded runner and returns its FileResults; edits
// change the sink's settings first.
func writeRun(t *testing.T, tbl *Table, runID string, recs []event, edits ...func(*sink.Config)) []sink.FileResult {
	t.Helper()
	bucket, prefix, err := tbl.RunFolder(runID)
	if err != nil {
		t.Fatal(err)
	}
	token := fmt.Sprintf("%s/%s/%d", t.Name(), runID, time.Now().UnixNano())
	p, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, recs)
	cfg := parquetSink(bucket, prefix, 3)
	for _, edit := range edits {
		edit(&cfg)
	}
	out := sink.Write(s, col, cfg)
	beam.ParDo0(s, &collectFn{Token: token}, out)
	if err := ptest.Run(p); err != nil {
		t.Fatalf("run %s: %v", runID, err)
	}
	resultsMu.Lock()
	defer resultsMu.Unlock()
	rs := collected[token]
	if len(rs) == 0 {
		t.Fatalf("run %s: no files", runID)
	}
	return rs
}

// testSink is the sink's connection to the test server.
func testSink() sink.Config {
	return sink.Config{Connection: sink.Connection{Endpoint: endpoint, Region: s3test.Region, PathStyle: true,
		Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}},
	}
}

// parquetSink writes Parquet files in shards shards under bucket and
// prefix on the test server.
func parquetSink(bucket, prefix string, shards int) sink.Config {
	cfg := testSink()
	cfg.Bucket, cfg.Prefix, cfg.Format, cfg.Shards = bucket, prefix, "parquet", shards
	return cfg
}

// catalogProps are the properties of a SQL catalog over a SQLite file,
// its warehouse in the test's bucket on the test server.
func catalogProps(t testing.TB, bucket string) iceberg.Properties {
	return iceberg.Properties{
		"type": "sql", "uri": "file:" + filepath.Join(t.TempDir(), "catalog.db"),
		"sql.driver": "sqlite", "sql.dialect": "sqlite",
		"warehouse":                 "s3://" + bucket + "/lake",
		icebergio.S3EndpointURL:     endpoint,
		icebergio.S3Region:          s3test.Region,
		icebergio.S3AccessKeyID:     s3test.AccessKey,
		icebergio.S3SecretAccessKey: s3test.SecretKey,
	}
}

// inGraph splits catalog properties as a pipeline's Config takes them:
// the test server's credentials by the environment variables s3test sets
// (CatalogSecretsEnv), the rest as they are.
func inGraph(props iceberg.Properties) (public, fromEnv map[string]string) {
	public = maps.Clone(map[string]string(props))
	delete(public, icebergio.S3AccessKeyID)
	delete(public, icebergio.S3SecretAccessKey)
	return public, map[string]string{icebergio.S3AccessKeyID: s3test.AccessKeyEnv, icebergio.S3SecretAccessKey: s3test.SecretKeyEnv}
}

func newCatalog(t testing.TB, bucket string) catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load(context.Background(), "s3once-test", catalogProps(t, bucket))
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// runStage is what a pipeline's table stage needs: its Config, the
// catalog and table it loads, and the run's folder, for the sink.
type runStage struct {
	cfg            Config
	cat            catalog.Catalog
	tbl            *Table
	bucket, prefix string
}

// stageRun loads the catalog cfg names (table lake.events, records of type
// event), opens the table and finds the run's folder.
func stageRun(t testing.TB, name string, props iceberg.Properties, runID string) runStage {
	t.Helper()
	ctx := context.Background()
	public, fromEnv := inGraph(props)
	st := runStage{cfg: Config{CatalogName: name, CatalogProperties: public, CatalogSecretsEnv: fromEnv, Table: "lake.events", RunID: runID, Record: reflect.TypeFor[event]()}}
	var err error
	if st.cat, err = st.cfg.LoadCatalog(ctx); err != nil {
		t.Fatal(err)
	}
	if st.tbl, err = Open(ctx, st.cat, st.cfg.Identifier(), st.cfg.Record, ""); err != nil {
		t.Fatal(err)
	}
	if st.bucket, st.prefix, err = st.tbl.RunFolder(runID); err != nil {
		t.Fatal(err)
	}
	return st
}

func openTable(t testing.TB, cat catalog.Catalog) *Table {
	t.Helper()
	tbl, err := Open(context.Background(), cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "")
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// snapshots are the table's snapshots, oldest first.
func snapshots(t testing.TB, cat catalog.Catalog) []table.Snapshot {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl.Metadata().Snapshots()
}

// scanIDs reads every row of the table with iceberg-go and returns the IDs,
// sorted, and the number of rows.
func scanIDs(t *testing.T, cat catalog.Catalog) []int64 {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithSelectedFields("ID")).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	var ids []int64
	for i := 0; i < int(at.NumCols()); i++ {
		col := at.Column(i)
		for _, chunk := range col.Data().Chunks() {
			for j := 0; j < chunk.Len(); j++ {
				var v int64
				if _, err := fmt.Sscan(chunk.ValueStr(j), &v); err != nil {
					t.Fatalf("scan: value %q: %v", chunk.ValueStr(j), err)
				}
				ids = append(ids, v)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// wantIDs checks that the table holds exactly the records from..from+n of
// each range, each once.
func wantIDs(t *testing.T, cat catalog.Catalog, ranges ...[2]int) {
	t.Helper()
	var want []int64
	for _, r := range ranges {
		for i := r[0]; i < r[0]+r[1]; i++ {
			want = append(want, int64(i))
		}
	}
	slices.Sort(want)
	got := scanIDs(t, cat)
	if !slices.Equal(got, want) {
		t.Fatalf("the table holds %d rows (first %v), want %d rows, each record once", len(got), got[:min(5, len(got))], len(want))
	}
}

// A run appends one snapshot; committing its results again, and rerunning
// it with the same input and run id, adds none. The table then holds every
// record once, and the commit marker beside the run's files names the
// snapshot.
func TestRerunAddsNoSnapshot(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	recs := events(0, 1500)
	rs := writeRun(t, tbl, "2024-06-01", recs)
	first, err := tbl.Commit(ctx, "2024-06-01", "global", rs)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Added || first.Files == 0 {
		t.Fatalf("first commit: %+v, want a snapshot added", first)
	}
	again, err := tbl.Commit(ctx, "2024-06-01", "global", append(slices.Clone(rs), rs...))
	if err != nil {
		t.Fatal(err)
	}
	rerun, err := tbl.Commit(ctx, "2024-06-01", "global", writeRun(t, tbl, "2024-06-01", recs))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Result{again, rerun} {
		if r.Added || r.SnapshotID != first.SnapshotID {
			t.Errorf("a repeated commit: %+v, want none added, snapshot %d found", r, first.SnapshotID)
		}
	}
	if n := len(snapshots(t, cat)); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
	wantIDs(t, cat, [2]int{0, 1500})

	_, prefix, _ := tbl.RunFolder("2024-06-01")
	out, err := srv.Client(s3test.ClientOptions{}).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(tablemarker.Key(prefix, "global"))})
	if err != nil {
		t.Fatalf("the commit marker: %v", err)
	}
	defer out.Body.Close()
	body := make([]byte, tablemarker.MaxBytes)
	n, _ := out.Body.Read(body)
	m, err := tablemarker.Decode(body[:n])
	if err != nil {
		t.Fatal(err)
	}
	if m.SnapshotID != first.SnapshotID || m.RunID != "2024-06-01" || m.Files != first.Files || m.Table != "lake.events" {
		t.Errorf("the commit marker %+v does not name snapshot %d of run 2024-06-01", m, first.SnapshotID)
	}
}

// The same run id with other files is refused, naming the earlier
// snapshot, and adds nothing; so is a file outside the run's folder.
func TestSameRunIDOtherFilesRefused(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	rs := writeRun(t, tbl, "run-a", events(0, 900))
	first, err := tbl.Commit(ctx, "run-a", "global", rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < 2 {
		t.Fatalf("the run wrote %d files; the test needs two", len(rs))
	}
	_, err = tbl.Commit(ctx, "run-a", "global", rs[1:])
	if !errors.Is(err, ErrRunChanged) || !strings.Contains(err.Error(), fmt.Sprint(first.SnapshotID)) {
		t.Errorf("other files under the same run id: %v, want ErrRunChanged naming snapshot %d", err, first.SnapshotID)
	}
	moved := slices.Clone(rs)
	moved[0].Key = strings.Replace(moved[0].Key, "/data/run-a/", "/data/run-b/", 1)
	if _, err := tbl.Commit(ctx, "run-a", "global", moved); err == nil || !strings.Contains(err.Error(), "not in the run's folder") {
		t.Errorf("a file outside the run's folder: %v, want a refusal", err)
	}
	if n := len(snapshots(t, cat)); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
	wantIDs(t, cat, [2]int{0, 900})
}

// Other writers commit between a round's staging and its commit: another
// run (the loop reloads, finds its run missing, and appends on top), and a
// duplicate of this very run (the loop reloads, finds the run, and adds
// nothing). Nothing is added twice or lost.
func TestConflictingCommitBetweenStagingAndCommit(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	other := openTable(t, cat)
	mine := writeRun(t, tbl, "mine", events(0, 800))
	theirs := writeRun(t, other, "theirs", events(10_000, 300))

	// Another run lands first.
	tbl.beforeCommit = func() {
		tbl.beforeCommit = nil
		if _, err := other.Commit(ctx, "theirs", "global", theirs); err != nil {
			t.Errorf("the other writer: %v", err)
		}
	}
	res, err := tbl.Commit(ctx, "mine", "global", mine)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Added || res.Rounds != 2 {
		t.Errorf("after another writer's commit: %+v, want added in round 2", res)
	}

	// A duplicate attempt of the same run lands first.
	again := writeRun(t, tbl, "mine-2", events(20_000, 200))
	var dup Result
	tbl.beforeCommit = func() {
		tbl.beforeCommit = nil
		var err error
		if dup, err = other.Commit(ctx, "mine-2", "global", again); err != nil {
			t.Errorf("the duplicate attempt: %v", err)
		}
	}
	res, err = tbl.Commit(ctx, "mine-2", "global", again)
	if err != nil {
		t.Fatal(err)
	}
	if res.Added || res.SnapshotID != dup.SnapshotID || !dup.Added || res.Rounds != 2 {
		t.Errorf("after a duplicate attempt's commit: %+v (the duplicate %+v), want nothing added, the duplicate's snapshot found in round 2", res, dup)
	}

	snaps := snapshots(t, cat)
	if len(snaps) != 3 {
		t.Errorf("%d snapshots, want 3 (theirs, mine, mine-2)", len(snaps))
	}
	seen := map[string]bool{}
	for _, s := range snaps {
		id := s.Summary.Properties[PropRunID]
		if seen[id] {
			t.Errorf("run %s has two snapshots", id)
		}
		seen[id] = true
	}
	wantIDs(t, cat, [2]int{0, 800}, [2]int{10_000, 300}, [2]int{20_000, 200})
	noOrphanManifests(t, cat)
}

// noOrphanManifests checks that every manifest list and manifest in the
// table's metadata folder is named by one of its snapshots: a refused
// commit round removes what it staged.
func noOrphanManifests(t *testing.T, cat catalog.Catalog) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		named[localPath(t, snap.ManifestList)] = true
		manifests, err := snap.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range manifests {
			named[localPath(t, m.FilePath())] = true
		}
	}
	avro, err := filepath.Glob(filepath.Join(localPath(t, tbl.Location()), "metadata", "*.avro"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range avro {
		if !named[f] {
			t.Errorf("%s is named by no snapshot", filepath.Base(f))
		}
	}
	if len(avro) == 0 {
		t.Error("no manifest in the metadata folder")
	}
}

// A table whose schema is not the record type's refuses to open, naming
// the difference; unsigned fields are refused by name.
func TestSchemaChecks(t *testing.T) {
	ctx := context.Background()
	cat := newCatalog(t, srv.Bucket(t))
	openTable(t, cat)
	type renamed struct {
		ID   int64
		Name string
		When time.Time
		Note *string
	}
	_, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[renamed](), "")
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `"At"`) || !strings.Contains(err.Error(), `"When"`) {
		t.Errorf("a table of another schema: %v, want ErrSchema naming At and When", err)
	}
	type unsigned struct {
		ID    int64
		Count uint64
	}
	_, _, err = SchemaOf(reflect.TypeFor[unsigned]())
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "unsigned.Count") {
		t.Errorf("a uint64 field: %v, want ErrSchema naming the field", err)
	}
}

// resultsFn collects Append's results by a token of the run.
type resultsFn struct{ Token string }

var appended = map[string][]Result{}

func (f *resultsFn) ProcessElement(r Result) {
	resultsMu.Lock()
	appended[f.Token] = append(appended[f.Token], r)
	resultsMu.Unlock()
}

func init() { register.DoFn1x0[Result](&resultsFn{}) }

// The pipeline-level stage: sink.Write then Append, run twice with the same
// run id and input. The first run appends one snapshot; the rerun adds
// none; the table holds every record once.
func TestAppendRerun(t *testing.T) {
	bucket := srv.Bucket(t)
	// The driver and the stage on the worker load the same catalog (one
	// SQLite file).
	st := stageRun(t, "s3once-test", catalogProps(t, bucket), "day=2024-06-02")
	cfg, cat, bucketName, prefix := st.cfg, st.cat, st.bucket, st.prefix
	run := func() Result {
		t.Helper()
		token := fmt.Sprintf("%s/%d", t.Name(), time.Now().UnixNano())
		p, s := beam.NewPipelineWithRoot()
		files := sink.Write(s, beam.CreateList(s, events(0, 1200)), parquetSink(bucketName, prefix, 2))
		beam.ParDo0(s, &resultsFn{Token: token}, Append(s, files, cfg))
		if err := ptest.Run(p); err != nil {
			t.Fatal(err)
		}
		resultsMu.Lock()
		defer resultsMu.Unlock()
		if len(appended[token]) != 1 {
			t.Fatalf("%d results, want one (one window)", len(appended[token]))
		}
		return appended[token][0]
	}
	first, second := run(), run()
	if !first.Added || second.Added || second.SnapshotID != first.SnapshotID {
		t.Errorf("first run %+v, rerun %+v: want one snapshot added, then found", first, second)
	}
	if n := len(snapshots(t, cat)); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
	wantIDs(t, cat, [2]int{0, 1200})
}

// A crash between the S3 commit and the table commit leaves committed files
// that no snapshot names and no commit marker records; the rerun with the
// same run id finds its files committed and appends them, once.
func TestCrashBeforeTableCommit(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	recs := events(0, 700)
	writeRun(t, tbl, "crashed", recs) // the table stage never ran
	if n := len(snapshots(t, cat)); n != 0 {
		t.Fatalf("%d snapshots before the table commit, want 0", n)
	}
	_, prefix, _ := tbl.RunFolder("crashed")
	_, err := srv.Client(s3test.ClientOptions{}).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(tablemarker.Key(prefix, "global"))})
	if err == nil {
		t.Fatal("a commit marker exists for a run that never reached the table")
	}
	res, err := tbl.Commit(ctx, "crashed", "global", writeRun(t, tbl, "crashed", recs))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Added {
		t.Errorf("the rerun: %+v, want its files appended", res)
	}
	if n := len(snapshots(t, cat)); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
	wantIDs(t, cat, [2]int{0, 700})
}

// The table's metadata writes go through the sink's S3 settings (WithS3):
// under a bucket policy that refuses object writes without SSE-KMS and
// checks the expected bucket owner, a table made and appended to with the
// sink's settings is refused nothing; without them, making the table is
// refused.
func TestMetadataWritesCarrySinkHeaders(t *testing.T) {
	bucket := srv.Bucket(t)
	base := sink.Config{Connection: sink.Connection{Region: s3test.Region, Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}}}
	withPolicy := func(t *testing.T, cfg sink.Config) (context.Context, *s3fault.Policy) {
		t.Helper()
		ctx, err := WithS3(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		pol := &s3fault.Policy{Owner: s3test.AccessKey, RequireEncryption: sink.EncryptionSSEKMS}
		utils.GetAwsConfig(ctx).HTTPClient = pol
		return ctx, pol
	}

	ctx, pol := withPolicy(t, base)
	if _, err := Open(ctx, newCatalog(t, bucket), table.Identifier{"lake", "plain"}, reflect.TypeFor[event](), ""); err == nil {
		t.Fatal("a table made without the sink's encryption settings was not refused by the bucket policy")
	}
	if len(pol.Refused()) == 0 {
		t.Fatal("the policy refused nothing")
	}

	withSettings := base
	withSettings.ExpectedBucketOwner, withSettings.Encryption = s3test.AccessKey, sink.EncryptionSSEKMS
	ctx, pol = withPolicy(t, withSettings)
	cat := newCatalog(t, bucket)
	tbl, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Commit(context.Background(), "owned", "global", writeRun(t, tbl, "owned", events(0, 300)))
	if err != nil || !res.Added {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	if r := pol.Refused(); len(r) > 0 {
		t.Errorf("the policy refused %v", r)
	}
	puts, owned := 0, 0
	for _, h := range pol.Seen() {
		if h.Get("x-amz-server-side-encryption") == sink.EncryptionSSEKMS {
			puts++
		}
		if h.Get("x-amz-expected-bucket-owner") == s3test.AccessKey {
			owned++
		}
	}
	if puts < 3 || owned != len(pol.Seen()) {
		t.Errorf("%d requests, %d with SSE-KMS, %d naming the owner: want the metadata, the manifests and the marker encrypted, every request naming the owner", len(pol.Seen()), puts, owned)
	}
	wantIDs(t, cat, [2]int{0, 300})
}

// Writers in parallel, each with its own catalog handle on one catalog
// (as two processes would have): two attempts of the same run and two
// other runs commit at once, several times over. Each run lands in exactly
// one snapshot, the two attempts of a run agree on it, and the table holds
// every record once.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	props := catalogProps(t, bucket)
	props["uri"] += "?_pragma=busy_timeout(20000)"
	handle := func() *Table {
		cat, err := catalog.Load(ctx, "s3once-test", props)
		if err != nil {
			t.Fatal(err)
		}
		return openTable(t, cat)
	}
	a, b := handle(), handle()
	type job struct {
		tbl   *Table
		run   string
		files []sink.FileResult
	}
	var jobs []job
	var ranges [][2]int
	for i := range 3 {
		shared := fmt.Sprintf("shared-%d", i)
		sf := writeRun(t, a, shared, events(i*10_000, 200))
		of := writeRun(t, b, fmt.Sprintf("other-%d", i), events(i*10_000+5_000, 100))
		jobs = append(jobs, job{a, shared, sf}, job{b, shared, sf}, job{b, fmt.Sprintf("other-%d", i), of})
		ranges = append(ranges, [2]int{i * 10_000, 200}, [2]int{i*10_000 + 5_000, 100})
	}
	results := make([]Result, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { results[i], errs[i] = j.tbl.Commit(ctx, j.run, "global", j.files) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d (run %s): %v", i, jobs[i].run, err)
		}
	}
	for i := 0; i < len(jobs); i += 3 {
		x, y := results[i], results[i+1]
		if x.SnapshotID != y.SnapshotID || x.Added == y.Added {
			t.Errorf("run %s: the attempts %+v and %+v, want one added and both naming its snapshot", jobs[i].run, x, y)
		}
	}
	cat, err := catalog.Load(ctx, "s3once-test", props)
	if err != nil {
		t.Fatal(err)
	}
	snaps := snapshots(t, cat)
	seen := map[string]int{}
	for _, s := range snaps {
		seen[s.Summary.Properties[PropRunID]]++
	}
	if len(snaps) != 6 || len(seen) != 6 {
		t.Errorf("%d snapshots of runs %v, want one for each of the 6 runs", len(snaps), seen)
	}
	wantIDs(t, cat, ranges...)
	noOrphanManifests(t, cat)
}
