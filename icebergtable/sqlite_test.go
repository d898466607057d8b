package icebergtable

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/s3once/s3once/sink"
)

func TestSQLiteDefaults(t *testing.T) {
	sqlite := func(uri string) map[string]string {
		return map[string]string{"type": "sql", "uri": uri, "sql.driver": "sqlite", "sql.dialect": "sqlite"}
	}
	for _, c := range []struct{ in, want string }{
		{"file:/d/c.db", "file:/d/c.db?_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)"},
		{"/d/c.db", "/d/c.db?_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)"},
		{"file:/d/c.db?cache=shared", "file:/d/c.db?cache=shared&_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)"},
		{"file:/d/c.db?_pragma=busy_timeout(1)", "file:/d/c.db?_pragma=busy_timeout(1)&_pragma=journal_mode(WAL)"},
		{"file:/d/c.db?_pragma=journal_mode(DELETE)", "file:/d/c.db?_pragma=journal_mode(DELETE)&_pragma=busy_timeout(15000)"},
		{"file::memory:", "file::memory:?_pragma=busy_timeout(15000)"},
		{"file:/d/c.db?_pragma=busy_timeout(5)&_pragma=journal_mode(WAL)", "file:/d/c.db?_pragma=busy_timeout(5)&_pragma=journal_mode(WAL)"},
	} {
		in := sqlite(c.in)
		before := maps.Clone(in)
		got := sqliteDefaults(in)
		if got["uri"] != c.want {
			t.Errorf("uri %q: got %q, want %q", c.in, got["uri"], c.want)
		}
		if !maps.Equal(in, before) {
			t.Errorf("uri %q: the caller's properties were changed", c.in)
		}
	}
	for _, props := range []map[string]string{
		{"type": "rest", "uri": "http://127.0.0.1:8181"},
		{"type": "sql", "uri": "postgres://127.0.0.1/cat", "sql.driver": "pgx", "sql.dialect": "postgres"},
		{"type": "glue"},
	} {
		if got := sqliteDefaults(props); !maps.Equal(got, props) {
			t.Errorf("%v: changed to %v", props, got)
		}
	}
}

// A program that holds a read transaction open on the SQLite catalog (as
// one paused while it loads a table does) holds up no other program's
// commit: the catalog is in WAL mode, which LoadCatalog sets.
func TestReaderHoldsUpNoCommit(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	props := catalogProps(t, bucket)
	st := stageRun(t, "s3once-test", props, "run-1")
	file := strings.TrimPrefix(props["uri"], "file:")
	if filepath.Base(file) != "catalog.db" {
		t.Fatalf("the catalog's file: %q", file)
	}
	db, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("the catalog's journal mode is %q, want wal", mode)
	}
	reader, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback()
	var tables int
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM iceberg_tables").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 1 {
		t.Fatalf("%d tables in the catalog, want 1", tables)
	}
	files := writeRun(t, st.tbl, "run-1", events(0, 100))
	res, err := st.tbl.Commit(ctx, "run-1", "global", files)
	if err != nil {
		t.Fatalf("a commit beside an open read transaction: %v", err)
	}
	if !res.Added || res.Rounds != 1 {
		t.Errorf("commit: %+v, want the run added in one round", res)
	}
	wantIDs(t, st.cat, [2]int{0, 100})
}

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("commit: %w", fmt.Errorf("database is locked (5) (SQLITE_BUSY)")), true},
		{fmt.Errorf("write: read tcp 127.0.0.1:1->127.0.0.1:2: connection reset by peer"), true},
		{fmt.Errorf("requirement failed: branch main has changed"), false},
		{fmt.Errorf("s3once iceberg: schema mismatch"), false},
		{nil, false},
	} {
		if got := transient(c.err); got != c.want {
			t.Errorf("transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// Four programs (each its own catalog handle, so its own connections, as
// four processes have) append four runs to one SQLite catalog at once,
// with the catalog's uri as the docs give it: LoadCatalog's busy timeout
// lets each wait for the others' locks, and every run lands in one
// snapshot.
func TestFourProgramsShareASQLiteCatalog(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	props := catalogProps(t, bucket)
	const programs = 4
	tables := make([]*Table, programs)
	files := make([][]sink.FileResult, programs)
	for i := range programs {
		st := stageRun(t, "s3once-test", props, fmt.Sprintf("program-%d", i))
		tables[i] = st.tbl
		files[i] = writeRun(t, st.tbl, fmt.Sprintf("program-%d", i), events(i*10_000, 100))
	}
	errs := make([]error, programs)
	var wg sync.WaitGroup
	for i := range programs {
		wg.Go(func() { _, errs[i] = tables[i].Commit(ctx, fmt.Sprintf("program-%d", i), "global", files[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("program %d: %v", i, err)
		}
	}
	st := stageRun(t, "s3once-test", props, "reader")
	snaps := snapshots(t, st.cat)
	if len(snaps) != programs {
		t.Errorf("%d snapshots, want one per program (%d)", len(snaps), programs)
	}
	seen := map[string]bool{}
	for _, s := range snaps {
		id := s.Summary.Properties[PropRunID]
		if seen[id] {
			t.Errorf("run %s has two snapshots", id)
		}
		seen[id] = true
	}
	var ranges [][2]int
	for i := range programs {
		ranges = append(ranges, [2]int{i * 10_000, 100})
	}
	wantIDs(t, st.cat, ranges...)
}
