package icebergtable

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/sink"
)

// A Table starts each commit from the table as it last committed to it. A
// commit by another writer in between costs one refused round and a
// reload; a run the remembered state holds is looked for again in a
// reload, so a rollback since is seen and the run appended again.
func TestRememberedTableAgainstOtherWriters(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	a, b := openTable(t, cat), openTable(t, cat)
	commit := func(tbl *Table, run string, rs []sink.FileResult) Result {
		t.Helper()
		res, err := tbl.Commit(ctx, run, "global", rs)
		if err != nil {
			t.Fatalf("commit %s: %v", run, err)
		}
		return res
	}
	run1 := writeRun(t, a, "run-1", events(0, 300))
	run2 := writeRun(t, b, "run-2", events(300, 300))
	run3 := writeRun(t, a, "run-3", events(600, 300))
	run4 := writeRun(t, a, "run-4", events(900, 300))

	if r := commit(a, "run-1", run1); !r.Added || r.Rounds != 1 {
		t.Fatalf("run-1: %+v, want added in 1 round", r)
	}
	byB := commit(b, "run-2", run2)
	// a remembers the table before run-2: its first round is refused.
	if r := commit(a, "run-3", run3); !r.Added || r.Rounds != 2 {
		t.Errorf("run-3 after another writer's commit: %+v, want added in 2 rounds", r)
	}
	// run-2 again through a, which has not seen it: refused round, then
	// found in the reload.
	if r := commit(a, "run-2", run2); r.Added || r.SnapshotID != byB.SnapshotID {
		t.Errorf("run-2 again through the other Table: %+v, want snapshot %d found", r, byB.SnapshotID)
	}
	// Back to back, the remembered state is current: one round.
	r4 := commit(a, "run-4", run4)
	if !r4.Added || r4.Rounds != 1 {
		t.Errorf("run-4: %+v, want added in 1 round", r4)
	}
	wantIDs(t, cat, [2]int{0, 1200})

	// Roll main back to before run-4. a still remembers run-4's snapshot
	// as current; committing run-4 again must append it again.
	cur, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	parent := cur.SnapshotByID(r4.SnapshotID).ParentSnapshotID
	if parent == nil {
		t.Fatal("run-4's snapshot has no parent")
	}
	txn := cur.NewTransaction()
	if err := txn.RollbackToSnapshot(*parent); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatalf("roll back: %v", err)
	}
	wantIDs(t, cat, [2]int{0, 900})
	if r := commit(a, "run-4", run4); !r.Added || r.SnapshotID == r4.SnapshotID {
		t.Errorf("run-4 after a rollback: %+v, want a new snapshot (not %d)", r, r4.SnapshotID)
	}
	wantIDs(t, cat, [2]int{0, 1200})
}

// The table a Table remembers between commits does not keep the earlier
// versions of the table's metadata alive: from the 40th commit to the
// 200th, the live heap grows by what 160 more snapshots take in one
// version of the metadata, not by every version's.
func TestRememberedTableKeepsNoHistory(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var at40 uint64
	for i := range 200 {
		run := fmt.Sprintf("run-%03d", i)
		if res, err := tbl.Commit(ctx, run, "global", []sink.FileResult{stubFile(t, tbl, run)}); err != nil || !res.Added || res.Rounds != 1 {
			t.Fatalf("commit %s: %+v, %v", run, res, err)
		}
		if i == 39 {
			at40 = live()
		}
	}
	at200 := live()
	// The Table, and the table it remembers, must be live at the second
	// measure too.
	runtime.KeepAlive(tbl)
	t.Logf("live heap: %.1f MiB after 40 commits, %.1f MiB after 200", float64(at40)/(1<<20), float64(at200)/(1<<20))
	if at200 > at40+8<<20 {
		t.Errorf("the live heap grew by %.1f MiB from the 40th commit to the 200th: the remembered table keeps earlier versions of the metadata alive", float64(at200-at40)/(1<<20))
	}
}

// A commit to another branch moves no main snapshot, so the catalog's
// requirement on main lets a round from the remembered table through, but
// the table's sequence numbers and row ids moved on: that round fails, and
// the next one, reloaded, appends. Nothing is lost or added twice.
func TestRememberedTableAfterABranchCommit(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	a, b := openTable(t, cat), openTable(t, cat)
	run1 := writeRun(t, a, "run-1", events(0, 300))
	side := writeRun(t, b, "side", events(300, 300))
	run2 := writeRun(t, a, "run-2", events(600, 300))
	if r, err := a.Commit(ctx, "run-1", "global", run1); err != nil || !r.Added {
		t.Fatalf("run-1: %+v, %v", r, err)
	}
	// Another writer appends to a branch of its own.
	cur, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	dfs, err := dataFilesOf(cur, side)
	if err != nil {
		t.Fatal(err)
	}
	txn := cur.NewTransactionOnBranch("audit")
	if err := txn.AddDataFiles(ctx, dfs, nil, table.WithoutDuplicateCheck()); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatalf("the branch commit: %v", err)
	}
	r, err := a.Commit(ctx, "run-2", "global", run2)
	if err != nil || !r.Added {
		t.Fatalf("run-2 after a commit to another branch: %+v, %v", r, err)
	}
	if r.Rounds != 2 {
		t.Errorf("run-2: %d rounds, want 2 (the remembered round fails, the reloaded one appends)", r.Rounds)
	}
	wantIDs(t, cat, [2]int{0, 300}, [2]int{600, 300})
}
