package icebergtable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// Expiry is what ExpireSnapshots keeps of a table's history.
type Expiry struct {
	// OlderThan: only snapshots older than this are expired (0: any
	// snapshot beyond RetainLast).
	OlderThan time.Duration
	// RetainLast is how many of main's newest snapshots are kept whatever
	// their age: at least 1.
	RetainLast int
}

// ExpiryReport is what ExpireSnapshots did.
type ExpiryReport struct {
	// Expired are the snapshots the table kept before and keeps no more.
	Expired []int64
	// Kept is the number of snapshots the table keeps after.
	Kept int
	// MarkersWritten is the number of commit markers written for runs
	// whose snapshot was expired and whose marker was missing.
	MarkersWritten int
	// Rounds is how many rounds it took (more than one when other writers
	// committed in between).
	Rounds int
}

// ExpireSnapshots removes from the table's metadata the snapshots older
// than e.OlderThan beyond main's e.RetainLast newest, with iceberg-go's
// Transaction.ExpireSnapshots: the current snapshot and every snapshot a
// branch or tag points at are kept, and a table whose branch or tag would
// be dropped by its max-ref-age-ms is refused. It deletes no file: the
// manifests, manifest lists and data files that no kept snapshot names
// are left to orphan-file removal, with its safety age.
//
// A run's snapshot is its run id's record (see Commit); once it is
// expired, the run window's commit marker is. So before it commits,
// ExpireSnapshots makes sure that every snapshot it expires whose summary
// holds a run id has its marker, writing the missing ones from the
// summary; a marker it cannot read stops it, expiring nothing. A Commit
// that loads the table after this commit therefore finds the marker of
// every run it expired, and one that loaded it before finds the snapshot.
//
// The commit requires that no branch or tag moved since the round's load:
// when another writer committed in between, the round is retried from a
// reload (at most 20 rounds).
func (t *Table) ExpireSnapshots(ctx context.Context, e Expiry) (ExpiryReport, error) {
	name := strings.Join(t.ident, ".")
	if e.RetainLast < 1 || e.OlderThan < 0 {
		return ExpiryReport{}, fmt.Errorf("s3once iceberg: expire snapshots of the table %s: keep at least 1 snapshot (RetainLast %d) and give a non-negative age (OlderThan %v)", name, e.RetainLast, e.OlderThan)
	}
	ctx = t.withAWS(ctx)
	t.takeHead() // the next Commit reloads
	var rep ExpiryReport
	var before []table.Snapshot
	backoff := 50 * time.Millisecond
	for rep.Rounds = 1; ; rep.Rounds++ {
		tbl, err := t.reload(ctx)
		if err != nil {
			return rep, err
		}
		if before == nil {
			before = tbl.Metadata().Snapshots()
		}
		txn := tbl.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithOlderThan(e.OlderThan), table.WithRetainLast(e.RetainLast), table.WithPostCommit(false)); err != nil {
			return rep, fmt.Errorf("s3once iceberg: expire snapshots of the table %s: %w", name, err)
		}
		staged, err := txn.StagedTable()
		if err != nil {
			return rep, fmt.Errorf("s3once iceberg: expire snapshots of the table %s: %w", name, err)
		}
		kept := staged.Metadata()
		keptRefs := map[string]bool{}
		for ref := range kept.Refs() {
			keptRefs[ref] = true
		}
		for ref := range tbl.Metadata().Refs() {
			if !keptRefs[ref] {
				return rep, fmt.Errorf("s3once iceberg: expire snapshots of the table %s: the table's retention (max-ref-age-ms) would drop the branch or tag %q; remove it yourself, or raise its max-ref-age-ms, then expire again", name, ref)
			}
		}
		var expired []table.Snapshot
		for _, s := range tbl.Metadata().Snapshots() {
			if kept.SnapshotByID(s.SnapshotID) == nil {
				expired = append(expired, s)
			}
		}
		if len(expired) > 0 {
			for _, s := range expired {
				wrote, err := t.keepRunRecord(ctx, tbl, s)
				if err != nil {
					return rep, fmt.Errorf("s3once iceberg: expire snapshots of the table %s: snapshot %d: %w; nothing was expired", name, s.SnapshotID, err)
				}
				if wrote {
					rep.MarkersWritten++
				}
			}
			t.step("expire-marked", 0)
			if _, err = txn.Commit(ctx); err != nil {
				if (conflict(err) || transient(err)) && rep.Rounds < maxCommitRounds {
					// Another writer committed first, or the answer was
					// lost: the next round's reload shows what holds.
					if err := sleep(ctx, backoff+rand.N(backoff)); err != nil {
						return rep, err
					}
					backoff = min(2*backoff, 2*time.Second)
					continue
				}
				return rep, fmt.Errorf("s3once iceberg: expire %d snapshots of the table %s (after %d rounds; the markers written stay, and running it again is safe): %w", len(expired), name, rep.Rounds, err)
			}
		}
		after, err := t.reload(ctx)
		if err != nil {
			return rep, err
		}
		for _, s := range before {
			if after.Metadata().SnapshotByID(s.SnapshotID) == nil {
				rep.Expired = append(rep.Expired, s.SnapshotID)
			}
		}
		slices.Sort(rep.Expired)
		rep.Kept = len(after.Metadata().Snapshots())
		return rep, nil
	}
}

// keepRunRecord makes sure that a run's snapshot about to be expired
// leaves its commit marker behind: a snapshot whose summary holds no run
// id needs none; a marker that exists stays as it is (it names this
// snapshot, or a later one of the same run appended after a rollback);
// a missing one is written from the summary. wrote reports a write.
func (t *Table) keepRunRecord(ctx context.Context, tbl *table.Table, s table.Snapshot) (wrote bool, err error) {
	if s.Summary == nil || s.Summary.Properties[PropRunID] == "" {
		return false, nil
	}
	props := s.Summary.Properties
	runID, window := props[PropRunID], props[PropWindow]
	if CheckRunID(runID) != nil || window == "" {
		return false, nil // not a summary the table stage wrote
	}
	_, _, ok, err := t.readMarker(ctx, tbl, runID, window)
	if err != nil || ok {
		return false, err
	}
	files, err := strconv.Atoi(props[PropFiles])
	digest := props[PropFilesSHA256]
	if err != nil || files < 0 || len(digest) != 64 {
		return false, fmt.Errorf("its summary records run %q (window %s) with %s=%q and %s=%q, which is no record of a run: restore the summary, or remove %s from it", runID, window, PropFiles, props[PropFiles], PropFilesSHA256, digest, PropRunID)
	}
	return true, t.writeMarker(ctx, tbl, runID, window, Result{SnapshotID: s.SnapshotID, Files: files}, digest)
}
