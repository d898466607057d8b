package icebergtable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/s3once/s3once/internal/tablemarker"
	"github.com/s3once/s3once/sink"
)

// Snapshot summary properties of a run's snapshot: the idempotency key
// (run id and window) and what the run added.
const (
	PropRunID       = "s3once.run-id"
	PropWindow      = "s3once.window"
	PropFiles       = "s3once.files"
	PropFilesSHA256 = "s3once.files-sha256"
)

// ErrRunChanged is wrapped by the error of a run whose RunID (and window)
// an earlier snapshot already holds with other files.
var ErrRunChanged = errors.New("s3once iceberg: the run id is taken by other files")

// maxCommitRounds bounds the commit loop's rounds against concurrent
// writers: each round after a refused one reloads the table and looks for
// the run again.
const maxCommitRounds = 20

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._=-]{0,127}$`)

// CheckRunID refuses a run id that cannot name a folder segment: 1 to 128
// of [A-Za-z0-9._=-], starting with a letter or digit.
func CheckRunID(runID string) error {
	if !runIDPattern.MatchString(runID) {
		return fmt.Errorf("s3once iceberg: run id %q: use 1 to 128 letters, digits, '.', '_', '=' or '-', starting with a letter or digit; keep it stable across reruns of the same input (a date, a batch number), never random or time-based", runID)
	}
	return nil
}

// Table is one Iceberg table that runs append to.
type Table struct {
	cat    catalog.Catalog
	ident  table.Identifier
	schema *iceberg.Schema
	// bucket and path are the table location's.
	bucket, path string
	location     string
	// aws is the AWS configuration Open's context carried (WithS3), put
	// back in Commit's.
	aws *aws.Config
	// beforeCommit, when set, runs between staging a round's transaction
	// and committing it (tests: another writer commits there).
	beforeCommit func()
	// onStep, when set, runs at the maintenance steps (tests: a crash
	// there). Compact: "plan" before the plan is read or made, "planned"
	// once it holds, "written" after its n-th file is written.
	// ExpireSnapshots: "expire-marked" once the expired runs' markers are
	// written, before the commit. RemoveOrphans: "orphans-listed" between
	// the listing and the load, "orphans-deleted" after its n-th delete.
	onStep func(step string, n int)

	// commitMu makes the commits through this Table serial: each starts
	// from the table as the one before left it (head), so commits from
	// one process to one table never refuse each other.
	commitMu sync.Mutex
	// mu guards head and loaded.
	mu sync.Mutex
	// head is the table as this Table last committed to it or loaded it:
	// the next commit's first round starts from it instead of reloading
	// (see Commit). nil: reload.
	head *table.Table
	// loaded is the table as last loaded from the catalog; a kept head
	// reaches the table's files through its file IO.
	loaded *table.Table
}

// Open loads the table, creating it from the record type's schema
// (SchemaOf) at location (an s3:// URI; "" lets the catalog choose) if it
// is missing. The AWS configuration in ctx (WithS3) reaches iceberg-go's
// S3 file IO, here and in Commit. A table whose schema is not the record
// type's is refused. A new table is partitioned by partition (none: not
// partitioned); a table partitioned otherwise is refused. A
// new table gets commit.retry.num-retries=0: the commit loop here is the
// only one (see Commit), and a table that asks iceberg-go to retry is
// refused.
func Open(ctx context.Context, cat catalog.Catalog, ident table.Identifier, record reflect.Type, location string, partition ...PartitionField) (*Table, error) {
	schema, version, err := SchemaOf(record)
	if err != nil {
		return nil, err
	}
	spec, err := partitionSpec(schema, partition)
	if err != nil {
		return nil, err
	}
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		tbl, err = create(ctx, cat, ident, schema, spec, version, location)
	}
	if err != nil {
		return nil, fmt.Errorf("s3once iceberg: open the table %s: %w", name, err)
	}
	if diff := sameSchema(tbl.Schema(), schema); diff != "" {
		return nil, fmt.Errorf("%w: the table %s does not match the record type %v: %s; write to a table made from this type, or change the type to the table's", ErrSchema, name, record, diff)
	}
	if diff := sameSpec(tbl.Spec(), tbl.Schema(), partition); diff != "" {
		return nil, fmt.Errorf("%w: the table %s: %s; give Open (or Config.Partition) the table's partition fields, or write to another table", ErrPartition, name, diff)
	}
	if n := tbl.Properties().Get(table.CommitNumRetriesKey, "0"); n != "0" {
		return nil, fmt.Errorf("s3once iceberg: the table %s sets %s=%s: iceberg-go would replay a failed commit without looking for the run again; set it to 0 (the table stage retries itself)", name, table.CommitNumRetriesKey, n)
	}
	if err := checkMetricsModes(tbl.Properties()); err != nil {
		return nil, fmt.Errorf("s3once iceberg: the table %s: %w; set it to none, counts, full or truncate(N)", name, err)
	}
	t := &Table{cat: cat, ident: ident, schema: schema, location: tbl.Location(), aws: utils.GetAwsConfig(ctx), loaded: tbl}
	if t.bucket, t.path, err = splitS3(tbl.Location()); err != nil {
		return nil, fmt.Errorf("s3once iceberg: the table %s: %w", name, err)
	}
	return t, nil
}

func create(ctx context.Context, cat catalog.Catalog, ident table.Identifier, schema *iceberg.Schema, spec iceberg.PartitionSpec, version int, location string) (*table.Table, error) {
	if ns := catalog.NamespaceFromIdent(ident); len(ns) > 0 {
		exists, err := cat.CheckNamespaceExists(ctx, ns)
		if err != nil {
			return nil, err
		}
		if !exists {
			if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
				return nil, err
			}
		}
	}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(iceberg.Properties{
		table.PropertyFormatVersion: strconv.Itoa(version),
		table.CommitNumRetriesKey:   "0",
	}), catalog.WithPartitionSpec(&spec)}
	if location != "" {
		opts = append(opts, catalog.WithLocation(location))
	}
	tbl, err := cat.CreateTable(ctx, ident, schema, opts...)
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		return cat.LoadTable(ctx, ident) // another writer made it first
	}
	return tbl, err
}

// splitS3 splits an s3:// (or s3a://) location into bucket and path.
func splitS3(location string) (bucket, path string, err error) {
	u, err := url.Parse(location)
	if err != nil || (u.Scheme != "s3" && u.Scheme != "s3a") || u.Host == "" {
		return "", "", fmt.Errorf("its location %q is not s3://bucket/path: the table stage appends files the sink wrote to S3", location)
	}
	return u.Host, strings.Trim(u.Path, "/"), nil
}

// Location is the table's location.
func (t *Table) Location() string { return t.location }

// RunFolder returns the bucket and the sink Prefix of a run's data files:
// <table location>/data/<run id>. Each run writes a folder of its own, so
// the sink's partition rule refuses a rerun of the same run id with other
// input before it commits anything, and no run's files mix with
// another's.
func (t *Table) RunFolder(runID string) (bucket, prefix string, err error) {
	if err := CheckRunID(runID); err != nil {
		return "", "", err
	}
	p := "data/" + runID
	if t.path != "" {
		p = t.path + "/" + p
	}
	return t.bucket, p, nil
}

// Result is what Commit did.
type Result struct {
	// SnapshotID is the snapshot that holds the run's files: the new one,
	// or the earlier one a rerun found.
	SnapshotID int64
	// Added is false when an earlier snapshot already held the run.
	Added bool
	// Files is the number of data files in the run.
	Files int
	// Rounds is how many rounds the commit loop took (more than one when
	// other writers committed in between).
	Rounds int
}

// Commit appends a run's files (sink.Write's FileResults for one window of
// the run; duplicates from Beam's retries are merged) to the table as one
// snapshot, exactly once per run id and window. It is safe for concurrent
// use: commits through one Table are serial, each starting from the table
// as the one before left it, so they never refuse each other (the table
// stage shares one Table among its instances in a worker process):
//
//  1. take the table's current state and walk the current snapshot's
//     ancestry for a snapshot whose summary holds the run id and window:
//     if there is one, add nothing (and refuse, with ErrRunChanged, when
//     its digest of the file list is not this run's); if there is none,
//     read the run window's commit marker: one naming a snapshot the
//     table no longer keeps is of a run that landed and was expired since
//     (see ExpireSnapshots), and is treated as that snapshot, found;
//  2. otherwise append the files in a fresh transaction, with the run id,
//     the window and the digest as snapshot summary properties;
//  3. when the catalog refuses the commit because another writer committed
//     first (table.ErrCommitFailed), remove what the round staged, reload
//     the table and go back to 1.
//
// The first round starts from the table as this Table last committed to it
// (or loaded it), not from a reload: parsing the metadata file, which
// lists every snapshot, is most of a commit's cost on a long-lived table,
// and the catalog parses it once more inside the commit anyway. This is
// safe because the commit carries the catalog requirements that main still
// points at the snapshot the round started from and that the default
// partition spec and sort order are unchanged: if another writer committed
// in between, the catalog refuses the round and the next one reloads (any
// other failure of such a round is retried from a reload too: a commit to
// another branch leaves main alone but takes the next sequence number). A
// run found in that remembered state is looked for again in a reload
// before anything is reported, in case the table was rolled back since.
// Any error forgets the remembered state.
//
// iceberg-go's duplicate check (which reads every manifest of the current
// snapshot) is skipped: step 1 finds a rerun, and the files of a run lie in
// a folder of its own (RunFolder), so no other run can hold them. Every
// file must lie in the run's folder.
//
// After the commit, a marker beside the run's files
// (<run folder>/_s3once_table_commit-<window>) records the snapshot, so
// that `s3once verify`, which links no Iceberg, can name committed files
// of a run that never reached the table, and so that a retry after the
// snapshot's expiry finds the run (docs/design.md, "Run ids and the
// horizon"). A marker is written after its commit, so only a present
// marker says anything: a missing one costs one GET and proves nothing,
// and the run is then appended if main's ancestry does not hold it.
func (t *Table) Commit(ctx context.Context, runID, window string, results []sink.FileResult) (Result, error) {
	if t.schema == nil {
		return Result{}, fmt.Errorf("s3once iceberg: commit run %q to the table %s: %w", runID, strings.Join(t.ident, "."), errMaintenanceOnly)
	}
	ctx = t.withAWS(ctx)
	bucket, prefix, err := t.RunFolder(runID)
	if err != nil {
		return Result{}, err
	}
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	files, err := runFiles(bucket, prefix, results)
	if err != nil {
		return Result{}, err
	}
	digest := filesDigest(files)
	name := strings.Join(t.ident, ".")
	backoff := 50 * time.Millisecond
	tbl := t.takeHead()
	for round := 1; ; round++ {
		remembered := tbl != nil
		if !remembered {
			if tbl, err = t.reload(ctx); err != nil {
				return Result{}, err
			}
		}
		snap, landed, err := t.lookup(ctx, tbl, runID, window)
		if err != nil {
			return Result{}, err
		}
		if (snap != nil || landed != nil) && remembered && !mutTableTrustStaleHead() {
			if tbl, err = t.reload(ctx); err != nil {
				return Result{}, err
			}
			if snap, landed, err = t.lookup(ctx, tbl, runID, window); err != nil {
				return Result{}, err
			}
		}
		if mutTableSkipRunLookup() {
			snap, landed = nil, nil
		}
		if landed != nil {
			// The run's snapshot was expired: its marker is the record.
			if landed.FilesSHA256 != digest {
				return Result{}, fmt.Errorf("%w: snapshot %d of the table %s, since expired, appended run %q (window %s) with %d files of digest %s, as its commit marker records; this run has %d files of digest %s: its input or settings differ. Rerun with the input of that run, or give this run a new run id",
					ErrRunChanged, landed.SnapshotID, name, runID, window, landed.Files, landed.FilesSHA256, len(files), digest)
			}
			t.keepHead(tbl)
			return Result{SnapshotID: landed.SnapshotID, Files: len(files), Rounds: round}, nil
		}
		if snap != nil {
			if got := snap.Summary.Properties[PropFilesSHA256]; got != digest {
				return Result{}, fmt.Errorf("%w: snapshot %d of the table %s already appended run %q (window %s) with %s files of digest %s; this run has %d files of digest %s: its input or settings differ. Rerun with the input of that run, or give this run a new run id",
					ErrRunChanged, snap.SnapshotID, name, runID, window, snap.Summary.Properties[PropFiles], got, len(files), digest)
			}
			res := Result{SnapshotID: snap.SnapshotID, Files: len(files), Rounds: round}
			t.keepHead(tbl)
			return res, t.writeMarker(ctx, tbl, runID, window, res, digest)
		}
		if len(files) == 0 {
			t.keepHead(tbl)
			return Result{Rounds: round}, nil
		}
		dataFiles, err := dataFilesOf(tbl, files)
		if err != nil {
			return Result{}, err
		}
		txn := tbl.NewTransaction()
		if err := txn.AssertDefaultShape(); err != nil {
			return Result{}, fmt.Errorf("s3once iceberg: stage run %q's %d files for the table %s: %w", runID, len(files), name, err)
		}
		props := iceberg.Properties{PropRunID: runID, PropWindow: window, PropFiles: strconv.Itoa(len(files)), PropFilesSHA256: digest}
		if err := txn.AddDataFiles(ctx, dataFiles, props, table.WithoutDuplicateCheck()); err != nil {
			return Result{}, fmt.Errorf("s3once iceberg: stage run %q's %d files for the table %s: %w", runID, len(files), name, err)
		}
		if t.beforeCommit != nil {
			t.beforeCommit()
		}
		committed, err := txn.Commit(ctx)
		if err != nil && mutTableErrorAsLanded() {
			return Result{Added: true, Files: len(files), Rounds: round}, nil
		}
		refused := conflict(err)
		if refused && (mutTableDiscardOnConflict() || !t.mayHaveLanded(ctx, txn)) {
			// Nothing was applied: the round's new manifests and manifest
			// list are referenced by no snapshot.
			discardStaged(ctx, txn, tbl)
		}
		if err != nil && !refused && mutTableDiscardOnAmbiguous() {
			discardStaged(ctx, txn, tbl)
		}
		// A round from the remembered table can also fail on what the
		// table became since without moving main (a commit to another
		// branch takes the next sequence number and row ids): any failure
		// of such a round is retried from a reload, whose ancestry walk
		// finds the run if the commit landed after all. Its staged files
		// stay unless the catalog refused it outright.
		// A round whose catalog was busy or unreachable (transient) is
		// retried from a reload too, after a back-off: if the commit was
		// applied before the error came back, the reload finds the run.
		busy := !refused && transient(err)
		if err != nil && (refused || remembered || busy) && round < maxCommitRounds {
			// A refused round that started from a reload lost to a writer
			// committing right now: back off. One that started from the
			// remembered table lost to a commit made at any time since
			// this Table's last one: reload at once.
			if !remembered || busy {
				if err := sleep(ctx, backoff+rand.N(backoff)); err != nil {
					return Result{}, err
				}
				backoff = min(2*backoff, 2*time.Second)
			}
			tbl = nil
			continue
		}
		if err != nil {
			return Result{}, fmt.Errorf("s3once iceberg: commit run %q's %d files to the table %s (after %d rounds; a rerun with the same run id finds the snapshot if it landed, else appends the files): %w", runID, len(files), name, round, err)
		}
		snap = committed.CurrentSnapshot()
		if snap == nil {
			return Result{}, fmt.Errorf("s3once iceberg: the table %s has no current snapshot after run %q's commit", name, runID)
		}
		res := Result{SnapshotID: snap.SnapshotID, Added: true, Files: len(files), Rounds: round}
		t.keepHead(t.detach(committed))
		return res, t.writeMarker(ctx, committed, runID, window, res, digest)
	}
}

// reload loads the table's current state from the catalog.
func (t *Table) reload(ctx context.Context) (*table.Table, error) {
	tbl, err := t.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return nil, fmt.Errorf("s3once iceberg: reload the table %s: %w", strings.Join(t.ident, "."), err)
	}
	t.mu.Lock()
	t.loaded = tbl
	t.mu.Unlock()
	return tbl, nil
}

// takeHead returns the remembered state of the table, if any, and forgets
// it: a commit that fails leaves the next one to reload.
func (t *Table) takeHead() *table.Table {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.head
	t.head = nil
	return h
}

func (t *Table) keepHead(tbl *table.Table) {
	t.mu.Lock()
	t.head = tbl
	t.mu.Unlock()
}

// detach returns the committed table with metadata of its own, or nil if
// it cannot. The metadata of a table that iceberg-go's commit returns keeps
// the metadata it was built from reachable (iceberg-go v0.7.0), so a table
// remembered from one commit to the next would hold every earlier version
// of the metadata: hundreds of MiB after a few hundred commits. Building
// the metadata afresh from itself (in memory, no JSON) cuts that chain;
// the file IO is the last loaded table's, as the committed table's is.
func (t *Table) detach(committed *table.Table) *table.Table {
	b, err := table.MetadataBuilderFromBase(committed.Metadata(), committed.MetadataLocation())
	if err != nil {
		return nil
	}
	md, err := b.Build()
	if err != nil {
		return nil
	}
	t.mu.Lock()
	loaded := t.loaded
	t.mu.Unlock()
	return table.New(committed.Identifier(), md, committed.MetadataLocation(), loaded.FS, t.cat)
}

// mayHaveLanded re-checks a conflict answer against a reload before
// anything staged is removed: a catalog, or an HTTP client in front of
// one, that retried a commit which had landed answers the retry with a
// conflict. It reports true when the reloaded table holds the round's
// staged snapshot, or when that cannot be told (the staged snapshot or the
// reload failed); the next round's look-up decides what the run did.
func (t *Table) mayHaveLanded(ctx context.Context, txn *table.Transaction) bool {
	staged, err := txn.StagedTable()
	if err != nil || staged.CurrentSnapshot() == nil {
		return true
	}
	tbl, err := t.reload(ctx)
	return err != nil || tbl.Metadata().SnapshotByID(staged.CurrentSnapshot().SnapshotID) != nil
}

// discardStaged removes, as well as it can, what a refused commit round
// wrote: its snapshot's manifest list and the manifests written for that
// snapshot (the new one, and any it merged others into). Manifests of
// earlier snapshots, which the list also names, stay. A file left behind
// is only unreferenced metadata, which Iceberg's orphan-file clean-up
// removes.
func discardStaged(ctx context.Context, txn *table.Transaction, base *table.Table) {
	staged, err := txn.StagedTable()
	if err != nil {
		return
	}
	snap := staged.CurrentSnapshot()
	if snap == nil || snap.ManifestList == "" || (base.CurrentSnapshot() != nil && base.CurrentSnapshot().SnapshotID == snap.SnapshotID) {
		return
	}
	fs, err := staged.FS(ctx)
	if err != nil {
		return
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return
	}
	if manifests, err := snap.Manifests(fs); err == nil {
		for _, m := range manifests {
			if m.SnapshotID() == snap.SnapshotID {
				_ = wfs.Remove(m.FilePath())
			}
		}
	}
	_ = wfs.Remove(snap.ManifestList)
}

// conflict reports whether a commit failed because another writer
// committed first, applying nothing: table.ErrCommitFailed (the REST
// catalog's 409, the SQL catalog's moved metadata location), or a failed
// table requirement, which the SQL catalog checks against the table it
// just loaded, before it writes anything, and returns without a sentinel
// (iceberg-go v0.7.0: "requirement failed: ...").
func conflict(err error) bool {
	return err != nil && (errors.Is(err, table.ErrCommitFailed) || strings.HasPrefix(err.Error(), "requirement failed: "))
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// findRun walks the current snapshot's ancestry for the run's snapshot.
func findRun(tbl *table.Table, runID, window string) *table.Snapshot {
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return nil
	}
	meta := tbl.Metadata()
	for _, s := range table.AncestorsOf(cur.SnapshotID, meta.SnapshotByID) {
		if s.Summary != nil && s.Summary.Properties[PropRunID] == runID && s.Summary.Properties[PropWindow] == window {
			return &s
		}
	}
	return nil
}

// lookup finds a run's window in the table: its snapshot in main's
// ancestry (snap), or else, when the run's commit marker names a snapshot
// of this table that the table no longer keeps, that marker (landed): the
// run landed and its snapshot was expired since, and expiry writes the
// marker of every run snapshot it expires before it commits (see
// ExpireSnapshots). Neither: the run is not in the table, and one GET of
// the missing marker is what a new window's commit pays for that answer.
// A marker whose snapshot the table still keeps outside main's ancestry
// is of a run the table was rolled back past: the run is appended again
// and the marker rewritten to name the new snapshot.
//
// Call it on a table loaded before the marker is read: an expiry that
// committed before that load wrote its markers before, so the run is in
// the table loaded or its marker is found.
func (t *Table) lookup(ctx context.Context, tbl *table.Table, runID, window string) (snap *table.Snapshot, landed *tablemarker.Marker, err error) {
	if snap := findRun(tbl, runID, window); snap != nil {
		return snap, nil, nil
	}
	m, uri, ok, err := t.readMarker(ctx, tbl, runID, window)
	if err != nil || !ok {
		return nil, nil, err
	}
	name := strings.Join(t.ident, ".")
	if m.Table != name || m.RunID != runID || m.Window != window {
		return nil, nil, fmt.Errorf("s3once iceberg: the commit marker %s records run %q (window %s) of the table %s, not run %q (window %s) of the table %s: the run folder holds another table's run, so this one cannot tell whether it landed; give this run a new run id",
			uri, m.RunID, m.Window, m.Table, runID, window, name)
	}
	if tbl.Metadata().SnapshotByID(m.SnapshotID) == nil {
		return nil, &m, nil // expired
	}
	if cur := tbl.CurrentSnapshot(); cur != nil {
		for _, s := range table.AncestorsOf(cur.SnapshotID, tbl.Metadata().SnapshotByID) {
			if s.SnapshotID == m.SnapshotID {
				return nil, nil, fmt.Errorf("s3once iceberg: the commit marker %s names snapshot %d of the table %s for run %q (window %s), but that snapshot's summary does not hold the run: the marker or the snapshot was changed by hand; restore it, or give this run a new run id",
					uri, m.SnapshotID, name, runID, window)
			}
		}
	}
	return nil, nil, nil // rolled back past the run: append it again
}

// readMarker reads the commit marker of a run's window, through the
// table's file IO; ok is false when there is none. A marker that cannot be
// read or decoded is an error: the run may have landed.
func (t *Table) readMarker(ctx context.Context, tbl *table.Table, runID, window string) (m tablemarker.Marker, uri string, ok bool, err error) {
	uri, err = t.markerURI(runID, window)
	if err != nil {
		return m, uri, false, err
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return m, uri, false, fmt.Errorf("s3once iceberg: the table's file IO: %w", err)
	}
	f, err := fsys.Open(uri)
	if errors.Is(err, fs.ErrNotExist) {
		return m, uri, false, nil
	}
	if err != nil {
		return m, uri, false, fmt.Errorf("s3once iceberg: read the commit marker %s of run %q (window %s), which tells whether the run landed in a snapshot since expired: %w; check the bucket's permissions and retry", uri, runID, window, err)
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, tablemarker.MaxBytes+1))
	if err == nil {
		m, err = tablemarker.Decode(body)
	}
	if err != nil {
		return m, uri, false, fmt.Errorf("s3once iceberg: the commit marker %s of run %q (window %s): %w; the run may have landed in a snapshot since expired, so it is not appended: restore the marker, or give this run a new run id", uri, runID, window, err)
	}
	return m, uri, true, nil
}

// markerURI is the s3:// location of a run window's commit marker.
func (t *Table) markerURI(runID, window string) (string, error) {
	bucket, prefix, err := t.RunFolder(runID)
	if err != nil {
		return "", err
	}
	return "s3://" + bucket + "/" + tablemarker.Key(prefix, window), nil
}

// runFiles merges duplicate results and checks that every file lies in the
// run's folder.
func runFiles(bucket, prefix string, results []sink.FileResult) ([]sink.FileResult, error) {
	byKey := map[string]sink.FileResult{}
	for _, r := range results {
		if r.Bucket != bucket || !strings.HasPrefix(r.Key, prefix+"/") {
			return nil, fmt.Errorf("s3once iceberg: s3://%s/%s is not in the run's folder s3://%s/%s/: write the run with sink.Config Bucket and Prefix from Table.RunFolder", r.Bucket, r.Key, bucket, prefix)
		}
		if prev, ok := byKey[r.Key]; ok && (prev.Bytes != r.Bytes || prev.CRC64NVME != r.CRC64NVME || prev.Records != r.Records) {
			return nil, fmt.Errorf("s3once iceberg: two results for s3://%s/%s disagree (%d and %d bytes): the run's results are not of one run", r.Bucket, r.Key, prev.Bytes, r.Bytes)
		}
		byKey[r.Key] = r
	}
	files := make([]sink.FileResult, 0, len(byKey))
	for _, r := range byKey {
		files = append(files, r)
	}
	slices.SortFunc(files, func(a, b sink.FileResult) int { return strings.Compare(a.Key, b.Key) })
	return files, nil
}

// filesDigest is the SHA-256 of the run's file list: each file's key,
// size, CRC64NVME and record count, in key order.
func filesDigest(files []sink.FileResult) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\t%d\t%016x\t%d\n", f.Key, f.Bytes, f.CRC64NVME, f.Records)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// dataFilesOf describes the files as Iceberg data files, from what the
// sink reports of each: path, size and record count, and the metrics and
// split offsets its writer kept of the file's footer (metricsOf). No file
// is read back.
func dataFilesOf(tbl *table.Table, files []sink.FileResult) ([]iceberg.DataFile, error) {
	spec := tbl.Spec()
	meta := tbl.Metadata()
	schema := tbl.Schema()
	// Format version 3 tracks row lineage: each file's rows take the next
	// row ids of the table as this round reloaded it.
	lineage := meta.Version() >= 3
	nextRowID := meta.NextRowID()
	out := make([]iceberg.DataFile, 0, len(files))
	for _, f := range files {
		part, logical, err := partitionOf(spec, schema, f)
		if err != nil {
			return nil, err
		}
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "s3://"+f.Bucket+"/"+f.Key, iceberg.ParquetFile, part, logical, nil, f.Records, f.Bytes)
		if err != nil {
			return nil, fmt.Errorf("s3once iceberg: describe s3://%s/%s as a data file: %w", f.Bucket, f.Key, err)
		}
		m, err := metricsOf(schema, tbl.Properties(), f.Footer)
		if err != nil {
			return nil, fmt.Errorf("s3once iceberg: the metrics of s3://%s/%s: %w", f.Bucket, f.Key, err)
		}
		b = b.ColumnSizes(m.sizes).ValueCounts(m.values).NullValueCounts(m.nulls).
			LowerBoundValues(m.lower).UpperBoundValues(m.upper)
		if len(f.Footer.RowGroupOffsets) > 0 {
			b = b.SplitOffsets(f.Footer.RowGroupOffsets)
		}
		if lineage {
			b = b.FirstRowID(nextRowID)
			nextRowID += f.Records
		}
		out = append(out, b.Build())
	}
	return out, nil
}

// writeMarker records the run's snapshot beside its files, through the
// table's own file IO. The marker's bytes are a function of the run and
// its snapshot, so writing it again is harmless; a marker naming a
// snapshot the table was rolled back past is replaced.
func (t *Table) writeMarker(ctx context.Context, tbl *table.Table, runID, window string, res Result, digest string) error {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("s3once iceberg: the table's file IO: %w", err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("s3once iceberg: the table's file IO cannot write the commit marker")
	}
	uri, err := t.markerURI(runID, window)
	if err != nil {
		return err
	}
	body := tablemarker.Encode(tablemarker.Marker{
		RunID: runID, Window: window, Table: strings.Join(t.ident, "."), SnapshotID: res.SnapshotID,
		Files: res.Files, FilesSHA256: digest,
	})
	if err := wfs.WriteFile(uri, body); err != nil {
		return fmt.Errorf("s3once iceberg: run %q is in snapshot %d of the table, but its commit marker %s could not be written (run again with the same run id to write it): %w", runID, res.SnapshotID, uri, err)
	}
	return nil
}
