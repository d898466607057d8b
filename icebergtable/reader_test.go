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
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
)

// readerDir holds the independent reader: a Node program over icebird
// (which reads Iceberg metadata, manifest lists and manifests itself) and
// hyparquet (its Parquet reader), installed by make tools with npm ci. Two
// wrappers stand between icebird and its libraries (hooks.mjs): Node's raw
// inflate for Avro's deflate blocks, which hyparquet-compressors misreads,
// and nanosecond timestamps as integers, which hyparquet would cut to a
// millisecond Date. The objects are read from the test server's data
// folder (icebird fetches only from AWS's host names).
const readerDir = "testdata/icebird"

// TestIndependentReader: icebird, an Iceberg reader that shares no code
// with iceberg-go or parquet-go, reads a table that Commit appended to,
// from its current metadata file, and finds every record once with every
// value as written: the ID, the name, the optional note (null where it was
// nil) and the nanosecond timestamp, to the nanosecond.
func TestIndependentReader(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v (the independent reader runs on Node.js)", err)
	}
	if _, err := os.Stat(filepath.Join(readerDir, "node_modules", "icebird", "package.json")); err != nil {
		t.Fatalf("the reader's packages are not installed (run make tools, which runs npm ci in icebergtable/%s): %v", readerDir, err)
	}
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	recs := events(0, 1500)
	res, err := tbl.Commit(ctx, "2024-06-01", "global", writeRun(t, tbl, "2024-06-01", recs))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(node, "--import", "./hooks.mjs", "read.mjs", loaded.Location(), path.Base(loaded.MetadataLocation()), srv.Root())
	cmd.Dir = readerDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("icebird: %v\n%s", err, stderr.String())
	}

	// A row as icebird gives it: 64-bit integers as decimal strings (they
	// are BigInts in JavaScript), a timestamp as icebird decodes it.
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
			t.Fatalf("icebird's row %s: %v", sc.Bytes(), err)
		}
		id, err := strconv.ParseInt(unquote(r.ID), 10, 64)
		if err != nil {
			t.Fatalf("icebird's row %s: ID: %v", sc.Bytes(), err)
		}
		want, ok := byID[id]
		switch {
		case !ok:
			t.Fatalf("icebird read ID %d, which no record has", id)
		case seen[id]:
			t.Fatalf("icebird read ID %d twice", id)
		}
		seen[id] = true
		if r.Name != want.Name || (r.Note == nil) != (want.Note == nil) || (r.Note != nil && *r.Note != *want.Note) {
			t.Errorf("ID %d: icebird read name %q, note %v; want %q, %v", id, r.Name, deref(r.Note), want.Name, deref(want.Note))
		}
		if at, err := readTime(r.At); err != nil || !at.Equal(want.At) {
			t.Errorf("ID %d: icebird read the timestamp %s (%v, err %v); want %v", id, r.At, at, err, want.At)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(recs) {
		t.Fatalf("icebird read %d records of %d", len(seen), len(recs))
	}
	t.Logf("icebird read snapshot %d (%d files) from %s: %d records, each once, every value as written", res.SnapshotID, res.Files, path.Base(loaded.MetadataLocation()), len(seen))
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

// readTime reads a timestamp as icebird gives it: nanoseconds since the
// epoch (a BigInt, printed as a decimal string), or an ISO 8601 string.
func readTime(m json.RawMessage) (time.Time, error) {
	s := unquote(m)
	if ns, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(0, ns).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
