package icebergtable

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/internal/mutant"
)

// lyingCatalog applies every commit, and answers the first lies of them
// with a conflict, as a catalog (or an HTTP client in front of one) that
// retried a commit which had landed answers the retry.
type lyingCatalog struct {
	catalog.Catalog
	lies atomic.Int32
}

// LoadTable hands out tables that commit through c.
func (c *lyingCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *lyingCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	md, loc, err := c.Catalog.CommitTable(ctx, ident, reqs, updates)
	if err == nil && c.lies.Add(-1) >= 0 {
		return nil, "", fmt.Errorf("%w: the retried request found the table moved", table.ErrCommitFailed)
	}
	return md, loc, err
}

// A commit that landed but was answered with a conflict: the table stage
// re-checks against a reload before it removes anything, finds its run
// in the table, and adds nothing; the snapshot's manifest list and
// manifests stay, so every record reads back once (I10).
func TestConflictAnswerAfterTheCommitLanded(t *testing.T) {
	testConflictAnswerAfterTheCommitLanded(t, false)
}

// The same with the bug of discarding on a conflict answer put back: the
// check above must catch it.
func TestMutantTableDiscardOnConflict(t *testing.T) {
	if !mutant.Enabled {
		t.Skip("mutation points exist only in builds with the s3once_mutant tag")
	}
	defer mutant.Set(mutant.TableDiscardOnConflict)()
	testConflictAnswerAfterTheCommitLanded(t, true)
}

func testConflictAnswerAfterTheCommitLanded(t *testing.T, mutated bool) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	lying := &lyingCatalog{Catalog: newCatalog(t, bucket)}
	tbl := openTable(t, lying)
	files := writeRun(t, tbl, "run-1", events(0, 150))
	lying.lies.Store(1)
	res, err := tbl.Commit(ctx, "run-1", "global", files)
	if err != nil {
		t.Fatalf("commit answered with a conflict after it landed: %v", err)
	}
	if res.Added || res.Rounds != 2 {
		t.Errorf("result %+v: want the landed snapshot found by the second round, nothing added", res)
	}
	snaps := snapshots(t, lying.Catalog)
	if len(snaps) != 1 || snaps[0].SnapshotID != res.SnapshotID {
		t.Fatalf("%d snapshots (%v), want the one the result names, %d", len(snaps), snaps, res.SnapshotID)
	}
	fs, err := tbl.loaded.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, openErr := fs.Open(snaps[0].ManifestList)
	if mutated {
		if openErr == nil {
			t.Fatal("the mutant kept the manifest list: the conflict answer was not taken at its word, so this test proves nothing")
		}
		return
	}
	if openErr != nil {
		t.Fatalf("the landed snapshot's manifest list %s is gone: %v", snaps[0].ManifestList, openErr)
	}
	wantIDs(t, lying.Catalog, [2]int{0, 150})
}
