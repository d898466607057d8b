package icebergtable

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/sink"
)

// readerDir holds the independent readers, Node programs over packages
// that make tools installs with npm ci. read.mjs reads a whole table with
// icebird (which reads Iceberg metadata, manifest lists and manifests
// itself) and hyparquet (its Parquet reader). Two wrappers stand between
// icebird and its libraries (hooks.mjs): Node's raw inflate for Avro's
// deflate blocks, which hyparquet-compressors misreads, and nanosecond
// timestamps as integers, which hyparquet would cut to a millisecond Date.
// The objects are read from the test server's data folder (icebird fetches
// only from AWS's host names). duckdb.mjs reads data files with DuckDB
// (duckdb_test.go).
const readerDir = "testdata/icebird"

// TestIndependentReader: icebird, an Iceberg reader that shares no code
// with iceberg-go or parquet-go, reads a table that Commit appended to,
// from its current metadata file, and finds every record once with every
// value as written: the ID, the name, the optional note (null where it was
// nil) and the nanosecond timestamp, to the nanosecond.
func TestIndependentReader(t *testing.T) {
	node := readerNode(t, "icebird")
	recs, res, loaded := committedRun(t)
	out := runReader(t, "icebird", node, "--import", "./hooks.mjs", "read.mjs", loaded.Location(), path.Base(loaded.MetadataLocation()), srv.Root())
	n := checkRows(t, "icebird", out, recs, time.Nanosecond)
	if t.Failed() {
		return
	}
	t.Logf("icebird read snapshot %d (%d files) from %s: %d records, each once, every value as written", res.SnapshotID, res.Files, path.Base(loaded.MetadataLocation()), n)
}

// TestIndependentReaderPartitioned: icebird reads a table partitioned by
// day(At), whose manifests carry each file's partition value (a date), and
// finds every record once with every value as written.
func TestIndependentReaderPartitioned(t *testing.T) {
	node := readerNode(t, "icebird")
	recs, res, loaded := committedRunOf(t, spread(1000), eventDay, byDay...)
	out := runReader(t, "icebird", node, "--import", "./hooks.mjs", "read.mjs", loaded.Location(), path.Base(loaded.MetadataLocation()), srv.Root())
	n := checkRows(t, "icebird", out, recs, time.Nanosecond)
	if res.Files < 3 {
		t.Errorf("%d files; want at least one per day of three", res.Files)
	}
	if t.Failed() {
		return
	}
	t.Logf("icebird read the partitioned snapshot %d (%d files): %d records, each once, every value as written", res.SnapshotID, res.Files, n)
}

// committedRun writes 1,500 records with sink.Write, commits them to a new
// table, and returns the records, the commit's result and the table as the
// catalog loads it afterwards.
func committedRun(t *testing.T) ([]event, Result, *table.Table) {
	t.Helper()
	return committedRunOf(t, events(0, 1500), nil)
}

// committedRunOf writes recs with sink.Write and the Destination dest,
// commits them to a new table partitioned by partition, and returns the
// records, the commit's result and the table as the catalog loads it
// afterwards.
func committedRunOf(t *testing.T, recs []event, dest any, partition ...PartitionField) ([]event, Result, *table.Table) {
	t.Helper()
	ctx := context.Background()
	cat := newCatalog(t, srv.Bucket(t))
	tbl, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "", partition...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Commit(ctx, "2024-06-01", "global", writeRun(t, tbl, "2024-06-01", recs, func(c *sink.Config) { c.Destination = dest }))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	return recs, res, loaded
}

// readerNode returns the node executable for a reader in readerDir that
// runs on the npm package pkg, and fails the test, naming the fix, when
// Node.js or the package is not installed.
func readerNode(t *testing.T, pkg string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v (the independent readers run on Node.js; run make tools)", err)
	}
	if _, err := os.Stat(filepath.Join(readerDir, "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
		t.Fatalf("the reader's package %s is not installed (run make tools, which runs npm ci in icebergtable/%s): %v", pkg, readerDir, err)
	}
	return node
}

// runReader runs node with args in readerDir and returns what it printed;
// if it fails, the test fails with what it said on stderr.
func runReader(t *testing.T, reader, node string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(node, args...)
	cmd.Dir = readerDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", reader, err, stderr.String())
	}
	return out
}

// checkRows checks the rows an independent reader printed, one JSON object
// a line with the keys ID, Name, At and Note, against the records written:
// every record read once, and every value as written, the timestamp cut
// to the reader's grain (time.Nanosecond for a reader that keeps every
// digit). 64-bit integers may come as decimal strings (JavaScript's
// BigInts). It returns the number of records read.
func checkRows(t *testing.T, reader string, out []byte, recs []event, grain time.Duration) int {
	t.Helper()
	type row struct {
		ID   json.RawMessage
		Name string
		At   json.RawMessage
		Note *string
	}
	byID := map[int64]event{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	seen := map[int64]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s's row %s: %v", reader, sc.Bytes(), err)
		}
		id, err := strconv.ParseInt(unquote(r.ID), 10, 64)
		if err != nil {
			t.Fatalf("%s's row %s: ID: %v", reader, sc.Bytes(), err)
		}
		want, ok := byID[id]
		switch {
		case !ok:
			t.Fatalf("%s read ID %d, which no record has", reader, id)
		case seen[id]:
			t.Fatalf("%s read ID %d twice", reader, id)
		}
		seen[id] = true
		if r.Name != want.Name || (r.Note == nil) != (want.Note == nil) || (r.Note != nil && *r.Note != *want.Note) {
			t.Errorf("ID %d: %s read name %q, note %v; want %q, %v", id, reader, r.Name, deref(r.Note), want.Name, deref(want.Note))
		}
		if at, err := readTime(r.At); err != nil || !at.Equal(want.At.Truncate(grain)) {
			t.Errorf("ID %d: %s read the timestamp %s (%v, err %v); want %v", id, reader, r.At, at, err, want.At.Truncate(grain))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(recs) {
		t.Fatalf("%s read %d records of %d", reader, len(seen), len(recs))
	}
	return len(seen)
}

func unquote(m json.RawMessage) string {
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	return string(m)
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// readTime reads a timestamp as a reader gives it: nanoseconds since the
// epoch (a BigInt, printed as a decimal string), or an ISO 8601 string.
func readTime(m json.RawMessage) (time.Time, error) {
	s := unquote(m)
	if ns, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(0, ns).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
