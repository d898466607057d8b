package icebergtable

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/sink"
)

func init() {
	register.DoFn2x0[[]byte, func(event)](&eventGenFn{})
	register.Emitter1[event]()
}

// eventGenFn emits N events from From on, each named with Pad
// pseudo-random letters after its number, from one impulse.
type eventGenFn struct {
	From, N, Pad int
}

func (f *eventGenFn) ProcessElement(_ []byte, emit func(event)) {
	base := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	pad := make([]byte, f.Pad)
	for i := range f.N {
		id := int64(f.From + i)
		x := uint64(id)*0x9e3779b97f4a7c15 + 1
		for j := range pad {
			// Letters that snappy cannot shrink much: the files are
			// about as large as the records.
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			pad[j] = 'a' + byte(x%26)
		}
		emit(event{ID: id, Name: fmt.Sprintf("event-%08d-%s", id, pad), At: base.Add(time.Duration(id) * time.Microsecond)})
	}
}

// mergeManifests turns manifest merging on for a table, as docs/engines.md
// advises for a long-lived one.
func mergeManifests(ctx context.Context, b *testing.B, cat catalog.Catalog, ident table.Identifier) {
	loaded, err := cat.LoadTable(ctx, ident)
	if err != nil {
		b.Fatal(err)
	}
	txn := loaded.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{table.ManifestMergeEnabledKey: "true"}); err != nil {
		b.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}

// stubFile is a small data file of run, as the sink would report it; it
// need not exist, since a commit reads no data file.
func stubFile(tb testing.TB, tbl *Table, run string) sink.FileResult {
	tb.Helper()
	rb, prefix, err := tbl.RunFolder(run)
	if err != nil {
		tb.Fatal(err)
	}
	return sink.FileResult{Bucket: rb, Key: prefix + "/part-0.parquet", Bytes: 4096, Records: 100, Window: "global", SubBatches: 1}
}

// The table commit benchmark's sizes: earlierSnapshots snapshots before the
// measured ones, windowEvents events of about eventBytes record bytes each
// (64 MiB a window).
const (
	earlierSnapshots = 1000
	eventPad         = 200
	eventBytes       = 8 + 4 + 15 + eventPad + 8
	windowEvents     = (64 << 20) / eventBytes
)

// BenchmarkTableCommit measures what appending a window to a table costs
// against writing the window's files: each operation writes 64 MiB of
// records (about 285,000 events) as Parquet with sink.Write on the embedded
// runner into a run folder of its own, then commits them with Commit (one
// snapshot), on a table that already has 1,000 snapshots, each one small
// append, with manifest merging on (commit.manifest-merge.enabled=true, the
// setting docs/engines.md gives for a long-lived table). The SQL catalog
// over SQLite and the table's metadata live on the local server. The
// table is opened and committed to as the table stage does it: with the
// sink's S3 settings in the context (WithS3), so that iceberg-go's file IO
// reuses one AWS configuration and HTTP client instead of loading the
// default configuration at every table load.
//
// Metrics: commit/write, the geometric mean of each operation's commit
// time over its write time (goal: under 0.05); commit-ms and write-s, the
// means; snapshots, the table's snapshots at the end.
func BenchmarkTableCommit(b *testing.B) {
	bucket := srv.Bucket(b)
	sinkCfg := testSink()
	ctx, err := WithS3(context.Background(), sinkCfg)
	if err != nil {
		b.Fatal(err)
	}
	cat := newCatalog(b, bucket)
	tbl, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "")
	if err != nil {
		b.Fatal(err)
	}
	mergeManifests(ctx, b, cat, tbl.ident)
	// The earlier snapshots: one small file each, committed as runs of
	// their own (their files need not exist: a commit reads no data file).
	for i := range earlierSnapshots {
		run := fmt.Sprintf("earlier-%04d", i)
		if _, err := tbl.Commit(ctx, run, "global", []sink.FileResult{stubFile(b, tbl, run)}); err != nil {
			b.Fatalf("earlier snapshot %d: %v", i, err)
		}
	}

	var logs, commitSecs, writeSecs float64
	var fileBytes int64
	n := 0
	for b.Loop() {
		run := fmt.Sprintf("measured-%04d", n)
		rb, prefix, err := tbl.RunFolder(run)
		if err != nil {
			b.Fatal(err)
		}
		token := fmt.Sprintf("%s/%s", b.Name(), run)
		p, s := beam.NewPipelineWithRoot()
		col := beam.ParDo(s, &eventGenFn{From: n * windowEvents, N: windowEvents, Pad: eventPad}, beam.Impulse(s))
		cfg := sinkCfg
		cfg.Bucket, cfg.Prefix, cfg.Format = rb, prefix, "parquet"
		out := sink.Write(s, col, cfg)
		beam.ParDo0(s, &collectFn{Token: token}, out)
		start := time.Now()
		if err := ptest.Run(p); err != nil {
			b.Fatal(err)
		}
		wrote := time.Since(start)
		resultsMu.Lock()
		rs := collected[token]
		resultsMu.Unlock()
		start = time.Now()
		res, err := tbl.Commit(ctx, run, "global", rs)
		committed := time.Since(start)
		if err != nil || !res.Added {
			b.Fatalf("commit %s: %+v, %v", run, res, err)
		}
		for _, r := range rs {
			fileBytes += r.Bytes
		}
		logs += math.Log(committed.Seconds() / wrote.Seconds())
		commitSecs += committed.Seconds()
		writeSecs += wrote.Seconds()
		n++
	}
	snaps := len(snapshots(b, cat))
	if want := earlierSnapshots + n; snaps != want {
		b.Fatalf("the table has %d snapshots, want %d", snaps, want)
	}
	b.ReportMetric(math.Exp(logs/float64(n)), "commit/write")
	b.ReportMetric(1000*commitSecs/float64(n), "commit-ms")
	b.ReportMetric(writeSecs/float64(n), "write-s")
	b.ReportMetric(float64(fileBytes)/float64(n)/(1<<20), "file-MiB")
	b.ReportMetric(float64(snaps), "snapshots")
}

// expirySnapshots is how many snapshots BenchmarkCommitAfterExpiry's long
// table has before its expiry: 10,000, or S3ONCE_EXPIRY_SNAPSHOTS.
func expirySnapshots(b *testing.B) int {
	n := 10_000
	if s := os.Getenv("S3ONCE_EXPIRY_SNAPSHOTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= expiryKeep {
			b.Fatalf("S3ONCE_EXPIRY_SNAPSHOTS=%q: want a count above %d", s, expiryKeep)
		}
	}
	return n
}

// expiryKeep is the snapshot count BenchmarkCommitAfterExpiry expires the
// long table to.
const expiryKeep = 10

// BenchmarkCommitAfterExpiry measures what a commit costs on a long-lived
// table kept at its configured snapshot count: a table of 10,000 snapshots
// (S3ONCE_EXPIRY_SNAPSHOTS), each an append of one small run of its own
// (built by agedTable, without a commit per snapshot), with manifest
// merging on (as docs/engines.md advises; the fresh table too), is expired to
// its newest 10 with ExpireSnapshots, which writes the commit marker of
// each run it expires (agedTable's copies have none yet); each operation
// then commits one small run to it and one to a fresh table, in turns,
// each through a Table handle of its own (as a new stage starts: the
// first round reloads). The goal is a ratio of at most 1.5.
//
// Metrics: expired/fresh, the ratio of the mean commit times; expired-ms
// and fresh-ms, the means; expiry-ms, the one expiry; snapshots, the long
// table's before expiry.
//
//	go test -run '^$' -bench BenchmarkCommitAfterExpiry -benchtime 20x ./icebergtable/
func BenchmarkCommitAfterExpiry(b *testing.B) {
	ctx, err := WithS3(context.Background(), testSink())
	if err != nil {
		b.Fatal(err)
	}
	open := func(cat catalog.Catalog) *Table {
		tbl, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "")
		if err != nil {
			b.Fatal(err)
		}
		return tbl
	}
	long, fresh := newCatalog(b, srv.Bucket(b)), newCatalog(b, srv.Bucket(b))
	tbl := open(long)
	mergeManifests(ctx, b, long, tbl.ident)
	mergeManifests(ctx, b, fresh, open(fresh).ident)
	n := expirySnapshots(b)
	agedTable(ctx, b, long, tbl, n, 2)
	start := time.Now()
	rep, err := open(long).ExpireSnapshots(ctx, Expiry{RetainLast: expiryKeep})
	expiry := time.Since(start)
	if err != nil || rep.Kept != expiryKeep {
		b.Fatalf("expiry: kept %d snapshots, expired %d, %v; want %d kept", rep.Kept, len(rep.Expired), err, expiryKeep)
	}

	var expiredSecs, freshSecs float64
	ops := 0
	for b.Loop() {
		run := fmt.Sprintf("measured-%05d", ops)
		for _, c := range []struct {
			cat  catalog.Catalog
			secs *float64
		}{{long, &expiredSecs}, {fresh, &freshSecs}} {
			t := open(c.cat)
			start := time.Now()
			res, err := t.Commit(ctx, run, "global", []sink.FileResult{stubFile(b, t, run)})
			*c.secs += time.Since(start).Seconds()
			if err != nil || !res.Added {
				b.Fatalf("commit %s: %+v, %v", run, res, err)
			}
		}
		ops++
	}
	b.ReportMetric(expiredSecs/freshSecs, "expired/fresh")
	b.ReportMetric(1000*expiredSecs/float64(ops), "expired-ms")
	b.ReportMetric(1000*freshSecs/float64(ops), "fresh-ms")
	b.ReportMetric(float64(expiry.Milliseconds()), "expiry-ms")
	b.ReportMetric(float64(n), "snapshots")
}

// countingProxy is a reverse proxy in front of the test server that counts
// the S3 requests it passes, by method, and the body bytes each way: what
// the clients behind it read (response bodies) and wrote (request
// bodies). A catalog whose s3.endpoint is the proxy's URL reaches the
// bucket only through it.
type countingProxy struct {
	*httptest.Server
	mu sync.Mutex
	s3Traffic
}

// s3Traffic is what a countingProxy counted.
type s3Traffic struct {
	gets, puts, heads, others int
	read, written             int64
}

func newCountingProxy(tb testing.TB, target string) *countingProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	// The Host header stays the proxy's: it is what the client signed.
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.Out.Host = pr.In.Host }}
	p := &countingProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &countingReader{r: r.Body}
		r.Body = body
		cw := &countingWriter{ResponseWriter: w}
		rp.ServeHTTP(cw, r)
		p.mu.Lock()
		defer p.mu.Unlock()
		switch r.Method {
		case http.MethodGet:
			p.gets++
		case http.MethodPut:
			p.puts++
		case http.MethodHead:
			p.heads++
		default:
			p.others++
		}
		p.read += cw.n
		p.written += body.n
	}))
	tb.Cleanup(p.Close)
	return p
}

// take returns the counts since the last take and starts again.
func (p *countingProxy) take() s3Traffic {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.s3Traffic
	p.s3Traffic = s3Traffic{}
	return t
}

type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// stubFiles are n small data files of run, as the sink would report them
// (see stubFile).
func stubFiles(tb testing.TB, tbl *Table, run string, n int) []sink.FileResult {
	tb.Helper()
	rb, prefix, err := tbl.RunFolder(run)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]sink.FileResult, n)
	for i := range out {
		out[i] = sink.FileResult{Bucket: rb, Key: fmt.Sprintf("%s/part-%06d.parquet", prefix, i), Bytes: 4096, Records: 100, Window: "global", SubBatches: 1}
	}
	return out
}

// agedTable builds a table of snapshots snapshots holding dataFiles data
// files quickly, without a commit per snapshot (which costs time
// quadratic in the count: each metadata file lists every snapshot): one
// real commit of one small run ("first"); then snapshots-2 snapshots added
// in one catalog commit, each a copy of the first's (its summary with a
// run id of its own, "earlier-<n>", and the first's manifest list, so each
// is an append of one file as the table stage writes it); then one real
// commit of a run of dataFiles-1 files ("bulk"), which writes them into
// one manifest. Commits read the metadata file and the current snapshot's
// manifest list, never an older snapshot's, so the copies cost a commit
// what real snapshots would; only a scan back in time would tell them
// apart. tbl is left remembering the table as the bulk commit left it.
func agedTable(ctx context.Context, tb testing.TB, cat catalog.Catalog, tbl *Table, snapshots, dataFiles int) {
	tb.Helper()
	if snapshots < 2 || dataFiles < 2 {
		tb.Fatalf("agedTable: %d snapshots, %d data files: want at least 2 of each", snapshots, dataFiles)
	}
	if _, err := tbl.Commit(ctx, "first", "global", []sink.FileResult{stubFile(tb, tbl, "first")}); err != nil {
		tb.Fatal(err)
	}
	loaded, err := cat.LoadTable(ctx, tbl.ident)
	if err != nil {
		tb.Fatal(err)
	}
	first := *loaded.CurrentSnapshot()
	nextRowID := loaded.Metadata().NextRowID()
	updates := make([]table.Update, 0, snapshots-1)
	parent := first.SnapshotID
	for i := range snapshots - 2 {
		s := first
		s.SnapshotID = first.SnapshotID + int64(i) + 1
		p := parent
		s.ParentSnapshotID = &p
		s.SequenceNumber = first.SequenceNumber + int64(i) + 1
		s.TimestampMs = first.TimestampMs + int64(i)/100
		props := maps.Clone(first.Summary.Properties)
		props[PropRunID] = fmt.Sprintf("earlier-%06d", i)
		s.Summary = &table.Summary{Operation: first.Summary.Operation, Properties: props}
		if s.AddedRows != nil {
			first, added := nextRowID, *s.AddedRows
			s.FirstRowID = &first
			nextRowID += added
		}
		updates = append(updates, table.NewAddSnapshotUpdate(&s))
		parent = s.SnapshotID
	}
	updates = append(updates, table.NewSetSnapshotRefUpdate(table.MainBranch, parent, table.BranchRef, -1, -1, -1))
	firstID := first.SnapshotID
	if _, _, err := cat.CommitTable(ctx, tbl.ident, []table.Requirement{table.AssertRefSnapshotID(table.MainBranch, &firstID)}, updates); err != nil {
		tb.Fatalf("add %d snapshots: %v", snapshots-2, err)
	}
	tbl.takeHead() // the bulk commit reloads
	if _, err := tbl.Commit(ctx, "bulk", "global", stubFiles(tb, tbl, "bulk", dataFiles-1)); err != nil {
		tb.Fatal(err)
	}
	loaded, err = cat.LoadTable(ctx, tbl.ident)
	if err != nil {
		tb.Fatal(err)
	}
	if n := len(loaded.Metadata().Snapshots()); n != snapshots {
		tb.Fatalf("the aged table has %d snapshots, want %d", n, snapshots)
	}
	if n := len(table.AncestorsOf(loaded.CurrentSnapshot().SnapshotID, loaded.Metadata().SnapshotByID)); n != snapshots {
		tb.Fatalf("the aged table's main has %d snapshots in its ancestry, want %d", n, snapshots)
	}
}

// commitProfile is the file BenchmarkCommitAging writes a CPU profile of
// its measured commits to (S3ONCE_COMMIT_PROFILE); "" writes none.
func commitProfile() string { return os.Getenv("S3ONCE_COMMIT_PROFILE") }

// agingDataFiles is how many data files BenchmarkCommitAging's tables hold.
const agingDataFiles = 100_000

// BenchmarkCommitAging measures a commit as the table ages: on tables of
// 100, 1,000 and 10,000 snapshots (agedTable) holding 100,000 data files,
// with manifest merging on (as docs/engines.md advises), each operation
// commits one small run with Table.Commit, as a streaming table stage does
// window after window: on one Table handle, so each commit starts from the
// table as the previous one left it. The S3 requests go through a counting
// proxy (countingProxy); the SQL catalog over SQLite is a local file.
// S3ONCE_COMMIT_PROFILE=<file> writes a CPU profile of the measured
// commits alone.
//
// Metrics: commit-ms, the mean; GET/op, PUT/op, HEAD/op, the requests a
// commit makes; read-KiB/op and written-KiB/op, the body bytes;
// metadata-KiB, the metadata file's size at the end; snapshots and
// data-files, the table's before the measured commits.
//
//	go test -run '^$' -bench 'BenchmarkCommitAging' -benchtime 10x ./icebergtable/
func BenchmarkCommitAging(b *testing.B) {
	for _, snaps := range []int{100, 1000, 10_000} {
		b.Run(fmt.Sprintf("snapshots=%d", snaps), func(b *testing.B) {
			proxy := newCountingProxy(b, endpoint)
			sinkCfg := testSink()
			sinkCfg.Endpoint = proxy.URL
			ctx, err := WithS3(context.Background(), sinkCfg)
			if err != nil {
				b.Fatal(err)
			}
			props := catalogProps(b, srv.Bucket(b))
			props[icebergio.S3EndpointURL] = proxy.URL
			cat, err := catalog.Load(ctx, "s3once-bench", props)
			if err != nil {
				b.Fatal(err)
			}
			tbl, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "")
			if err != nil {
				b.Fatal(err)
			}
			mergeManifests(ctx, b, cat, tbl.ident)
			agedTable(ctx, b, cat, tbl, snaps, agingDataFiles)
			if path := commitProfile(); path != "" && snaps == 1000 {
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					b.Fatal(err)
				}
				defer pprof.StopCPUProfile()
			}
			proxy.take()
			var secs float64
			ops := 0
			for b.Loop() {
				run := fmt.Sprintf("measured-%05d", ops)
				start := time.Now()
				res, err := tbl.Commit(ctx, run, "global", []sink.FileResult{stubFile(b, tbl, run)})
				secs += time.Since(start).Seconds()
				if err != nil || !res.Added || res.Rounds != 1 {
					b.Fatalf("commit %s: %+v, %v", run, res, err)
				}
				ops++
			}
			tr := proxy.take()
			loaded, err := cat.LoadTable(ctx, tbl.ident)
			if err != nil {
				b.Fatal(err)
			}
			meta := metadataSize(ctx, b, loaded)
			per := func(n float64) float64 { return n / float64(ops) }
			b.ReportMetric(1000*per(secs), "commit-ms")
			b.ReportMetric(per(float64(tr.gets)), "GET/op")
			b.ReportMetric(per(float64(tr.puts)), "PUT/op")
			b.ReportMetric(per(float64(tr.heads)), "HEAD/op")
			b.ReportMetric(per(float64(tr.others)), "other/op")
			b.ReportMetric(per(float64(tr.read))/1024, "read-KiB/op")
			b.ReportMetric(per(float64(tr.written))/1024, "written-KiB/op")
			b.ReportMetric(float64(meta)/1024, "metadata-KiB")
			b.ReportMetric(float64(snaps), "snapshots")
			b.ReportMetric(agingDataFiles, "data-files")
		})
	}
}

// metadataSize is the size of the table's current metadata file.
func metadataSize(ctx context.Context, tb testing.TB, tbl *table.Table) int64 {
	tb.Helper()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := fsys.Open(tbl.MetadataLocation())
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

// peerEvent is the record shape of a peer's published sink benchmark:
// 6 columns, 142 bytes of data (8 + 8 + 16 + 8 + 24 + 78).
type peerEvent struct {
	ID      int64
	At      time.Time
	User    string // 16 bytes
	Kind    string // 8 bytes
	Item    string // 24 bytes
	Payload string // 78 bytes
}

// peerEventBytes is a peerEvent's data bytes.
const peerEventBytes = 8 + 8 + 16 + 8 + 24 + 78

// newPeerEvent makes event id at t, its strings of fixed lengths and
// pseudo-random letters.
func newPeerEvent(id int64, t time.Time) peerEvent {
	var pay [78]byte
	x := uint64(id)*0x9e3779b97f4a7c15 + 1
	for j := range pay {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		pay[j] = 'a' + byte(x%26)
	}
	return peerEvent{ID: id, At: t, User: fmt.Sprintf("user-%011d", id%1_000_000), Kind: [...]string{"pageview", "purchase", "cartadds", "searches"}[id%4],
		Item: fmt.Sprintf("item-%019d", id%50_000), Payload: string(pay[:])}
}

// peerTickFn makes PerTick events for each tick of a periodic impulse,
// stamped with the tick's time.
type peerTickFn struct {
	PerTick int
}

func (f *peerTickFn) ProcessElement(t beam.EventTime, _ []byte, emit func(beam.EventTime, peerEvent)) {
	at := t.ToTime().UTC()
	for i := range f.PerTick {
		emit(t, newPeerEvent(at.UnixMilli()*int64(f.PerTick)+int64(i), at))
	}
}

// peerGenFn emits N events from one impulse, one millisecond of event time
// apart.
type peerGenFn struct {
	N int
}

func (f *peerGenFn) ProcessElement(_ []byte, emit func(peerEvent)) {
	base := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	for i := range f.N {
		emit(newPeerEvent(int64(i), base.Add(time.Duration(i)*time.Millisecond)))
	}
}

// arrivalFn records when each window's commit result reaches it.
type arrivalFn struct {
	Token string
}

var (
	arrivalsMu sync.Mutex
	arrivals   = map[string]map[int64]time.Time{}
)

func (f *arrivalFn) ProcessElement(r Result) {
	arrivalsMu.Lock()
	defer arrivalsMu.Unlock()
	if arrivals[f.Token] == nil {
		arrivals[f.Token] = map[int64]time.Time{}
	}
	if _, ok := arrivals[f.Token][r.SnapshotID]; !ok {
		arrivals[f.Token][r.SnapshotID] = time.Now()
	}
}

func init() {
	register.DoFn3x0[beam.EventTime, []byte, func(beam.EventTime, peerEvent)](&peerTickFn{})
	register.DoFn2x0[[]byte, func(peerEvent)](&peerGenFn{})
	register.DoFn1x0[Result](&arrivalFn{})
	register.Emitter2[beam.EventTime, peerEvent]()
	register.Emitter1[peerEvent]()
}

// The catalog latency benchmark's shape: live events in fixed windows of
// latencyWindow, latencyTicks ticks a window, for latencyRun, at
// latencyRate records a second. The 10-second windows with 300 ms
// and 5 s of latency are scaled by a tenth: 1-second windows, 30 ms and
// 500 ms.
const (
	latencyWindow = time.Second
	latencyTicks  = 10
	latencyRun    = 10 * time.Second
	latencyRate   = 5_000
)

// BenchmarkCatalogLatency measures a streaming pipeline's records/s with
// latency injected into every catalog call of the table stage: live
// events (peerEvent, a periodic impulse firing latencyTicks times a
// window, each firing stamped with its time) in fixed 1-second windows,
// written by sink.WriteWindows as Parquet into the run's folder and
// appended by Append, one snapshot per window, on prism, for 10 seconds.
// The table stage loads its catalog through the fault catalog
// (faultcat_test.go) with a delay of latency=<d> before every LoadTable
// and CommitTable (latency=0: none). The sub-benchmarks run in turns
// within each operation, so each ratio compares runs made under the same
// load.
//
// Metrics, per latency: records/s (records in the table over the
// pipeline's wall time, from start to its last commit), <d>/0 (the
// ratio to latency=0's records/s; goal at least 0.9), calls/window
// (catalog calls the stage made per window committed), lag-ms (each
// window's commit result arrival after the window's end, wall clock: the
// mean and the last), snapshots (windows committed), records (in the
// table).
//
//	go test -run '^$' -bench 'BenchmarkCatalogLatency' -benchtime 1x ./icebergtable/
func BenchmarkCatalogLatency(b *testing.B) {
	latencies := []time.Duration{0, 30 * time.Millisecond, 500 * time.Millisecond, time.Second}
	type sums struct {
		recsPerSec, calls, windows, lag, lastLag, records float64
	}
	got := make([]sums, len(latencies))
	ops := 0
	for b.Loop() {
		for i, lat := range latencies {
			r := latencyRun1(b, fmt.Sprintf("op%d-lat%d", ops, i), lat)
			got[i].recsPerSec += r.recsPerSec
			got[i].calls += r.calls
			got[i].windows += r.windows
			got[i].lag += r.lag
			got[i].lastLag += r.lastLag
			got[i].records += r.records
		}
		ops++
	}
	for i, lat := range latencies {
		g := got[i]
		name := lat.String()
		if lat == 0 {
			name = "0"
		}
		b.ReportMetric(g.recsPerSec/float64(ops), "records/s-"+name)
		if i > 0 {
			b.ReportMetric(g.recsPerSec/got[0].recsPerSec, name+"/0")
		}
		b.ReportMetric(g.calls/g.windows, "calls/window-"+name)
		b.ReportMetric(g.lag/float64(ops), "lag-ms-"+name)
		b.ReportMetric(g.lastLag/float64(ops), "last-lag-ms-"+name)
		b.ReportMetric(g.windows/float64(ops), "snapshots-"+name)
		b.ReportMetric(g.records/float64(ops), "records-"+name)
	}
}

// latencyResult is one run of BenchmarkCatalogLatency's pipeline.
type latencyResult struct {
	recsPerSec, calls, windows, records float64
	// lag is the mean, lastLag the last window's, in milliseconds.
	lag, lastLag float64
}

// latencyRun1 runs the pipeline once on a table of its own, with latency
// before every catalog call of the table stage.
func latencyRun1(b *testing.B, name string, latency time.Duration) latencyResult {
	ctx := context.Background()
	bucket := srv.Bucket(b)
	props := sqliteDefaults(catalogProps(b, bucket))
	plain, err := catalog.Load(ctx, "latency", iceberg.Properties(props))
	if err != nil {
		b.Fatal(err)
	}
	tbl, err := Open(ctx, plain, table.Identifier{"lake", "events"}, reflect.TypeFor[peerEvent](), "")
	if err != nil {
		b.Fatal(err)
	}
	runID := "live-1"
	rb, prefix, err := tbl.RunFolder(runID)
	if err != nil {
		b.Fatal(err)
	}
	plan := faultPlan{at: map[int]faultKind{}, delay: map[int]time.Duration{}}
	if latency > 0 {
		for i := range 100_000 {
			plan.at[i], plan.delay[i] = faultDelay, latency
		}
	}
	st := newFaultState(plan)
	id := b.Name() + "/" + name
	defer registerFaultState(id, st)()
	public, fromEnv := inGraph(props)
	public["type"], public[faultPlanProp] = faultCatalogType, id
	cfg := Config{CatalogName: "latency", CatalogProperties: public, CatalogSecretsEnv: fromEnv,
		Table: "lake.events", RunID: runID, Record: reflect.TypeFor[peerEvent](), Sink: testSink()}

	p, s := beam.NewPipelineWithRoot()
	now := time.Now()
	ticks := periodic.Impulse(s, now, now.Add(latencyRun), latencyWindow/latencyTicks, false)
	recs := beam.ParDo(s, &peerTickFn{PerTick: latencyRate * int(latencyWindow/time.Millisecond) / 1000 / latencyTicks}, ticks)
	windowed := beam.WindowInto(s, window.NewFixedWindows(latencyWindow), recs)
	_, windows := sink.WriteWindows(s, windowed, parquetSink(rb, prefix, 2))
	beam.ParDo0(s, &arrivalFn{Token: id}, Append(s, windows, cfg))
	st.arm()
	start := time.Now()
	if err := ptest.Run(p); err != nil {
		b.Fatal(err)
	}
	arrivalsMu.Lock()
	arrived := maps.Clone(arrivals[id])
	delete(arrivals, id)
	arrivalsMu.Unlock()

	loaded, err := plain.LoadTable(ctx, tbl.ident)
	if err != nil {
		b.Fatal(err)
	}
	var res latencyResult
	var records int64
	var last time.Time
	var lastEnd time.Time
	for _, snap := range loaded.Metadata().Snapshots() {
		n, err := strconv.ParseInt(snap.Summary.Properties["added-records"], 10, 64)
		if err != nil {
			b.Fatalf("snapshot %d: added-records: %v", snap.SnapshotID, err)
		}
		records += n
		at, ok := arrived[snap.SnapshotID]
		if !ok {
			b.Fatalf("snapshot %d's result never arrived", snap.SnapshotID)
		}
		win := snap.Summary.Properties[PropWindow]
		_, endName, ok := strings.Cut(win, "-")
		end, err := time.Parse("20060102T150405Z", endName)
		if !ok || err != nil {
			b.Fatalf("snapshot %d: window %q: %v", snap.SnapshotID, win, err)
		}
		lag := at.Sub(end)
		res.lag += float64(lag.Milliseconds())
		if end.After(lastEnd) {
			lastEnd, res.lastLag = end, float64(lag.Milliseconds())
		}
		if at.After(last) {
			last = at
		}
	}
	res.windows = float64(len(arrived))
	if res.windows == 0 {
		b.Fatal("no window was committed")
	}
	res.lag /= res.windows
	res.records = float64(records)
	res.recsPerSec = float64(records) / last.Sub(start).Seconds()
	st.mu.Lock()
	res.calls = float64(st.calls)
	st.mu.Unlock()
	if got := st.counts()[faultDelay]; latency > 0 && got == 0 {
		b.Fatal("no catalog call was delayed")
	}
	return res
}

// BenchmarkPeerShape measures records/s per core of icebergtable.Write
// for the peer's record shape (peerEvent: 142 bytes, 6 columns): each
// operation writes 200,000 events from one impulse into a run of its own
// as Parquet and appends them in one snapshot, on prism; SQL catalog over
// SQLite, the test server on this machine.
//
// Metrics: records/s, over the pipeline's wall time; records/s/core, that
// over GOMAXPROCS; records/cpu-s, over this process's CPU time (user and
// system; the S3 server's own is not counted); MB/s, the records' data.
//
//	go test -run '^$' -bench 'BenchmarkPeerShape' -benchtime 3x ./icebergtable/
func BenchmarkPeerShape(b *testing.B) {
	const n = 200_000
	bucket := srv.Bucket(b)
	var wall, cpu float64
	ops := 0
	for b.Loop() {
		public, fromEnv := inGraph(catalogProps(b, bucket))
		public["warehouse"] = fmt.Sprintf("s3://%s/peer-%d", bucket, ops)
		cfg := Config{CatalogName: "peer", CatalogProperties: public, CatalogSecretsEnv: fromEnv,
			Table: "lake.events", RunID: "peer-1", Sink: testSink()}
		p, s := beam.NewPipelineWithRoot()
		recs := beam.ParDo(s, &peerGenFn{N: n}, beam.Impulse(s))
		Write(s, recs, cfg)
		cpu0 := cpuTime(b)
		start := time.Now()
		if err := ptest.Run(p); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start).Seconds()
		cpu += cpuTime(b) - cpu0
		ops++
	}
	rate := float64(n*ops) / wall
	b.ReportMetric(rate, "records/s")
	b.ReportMetric(rate/float64(runtime.GOMAXPROCS(0)), "records/s/core")
	b.ReportMetric(float64(n*ops)/cpu, "records/cpu-s")
	b.ReportMetric(rate*peerEventBytes/1e6, "MB/s")
}

// cpuTime is this process's user and system CPU time so far, in seconds.
func cpuTime(tb testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
