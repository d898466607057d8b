package icebergtable

import (
	"context"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
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
// table has before its expiry; S3ONCE_EXPIRY_SNAPSHOTS sets another count
// (make bench's figure is 10,000).
func expirySnapshots(b *testing.B) int {
	n := 2000
	if s := os.Getenv("S3ONCE_EXPIRY_SNAPSHOTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("S3ONCE_EXPIRY_SNAPSHOTS=%q: want a count", s)
		}
	}
	return n
}

// expiryKeep is the snapshot count BenchmarkCommitAfterExpiry expires the
// long table to.
const expiryKeep = 10

// BenchmarkCommitAfterExpiry measures what a commit costs on a long-lived
// table kept at its configured snapshot count: a table of 2,000 snapshots
// (S3ONCE_EXPIRY_SNAPSHOTS), each a small run of its own, with manifest
// merging on (as docs/engines.md advises; the fresh table too), is expired to
// its newest 10 with ExpireSnapshots; each operation then commits one
// small run to it and one to a fresh table, each through a Table handle
// of its own (as a new stage starts: the first round reloads). The goal
// is a ratio of at most 1.5.
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
	for i := range n {
		run := fmt.Sprintf("earlier-%05d", i)
		if _, err := tbl.Commit(ctx, run, "global", []sink.FileResult{stubFile(b, tbl, run)}); err != nil {
			b.Fatalf("earlier snapshot %d: %v", i, err)
		}
	}
	start := time.Now()
	rep, err := open(long).ExpireSnapshots(ctx, Expiry{RetainLast: expiryKeep})
	expiry := time.Since(start)
	if err != nil || rep.Kept != expiryKeep {
		b.Fatalf("expiry: %+v, %v", rep, err)
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
