package icebergtable

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// DefaultOrphanAge is the safety age RemoveOrphans uses when Orphans
// names none; MinOrphanAge the least it accepts outside a dry run.
const (
	DefaultOrphanAge = 72 * time.Hour
	MinOrphanAge     = time.Hour
)

// Orphans is what RemoveOrphans deletes.
type Orphans struct {
	// OlderThan is the safety age: only a file last modified longer ago
	// than this is deleted (0: DefaultOrphanAge). It must exceed the
	// longest time a commit may stay in flight (staged, not yet landed or
	// refused) and the longest a query may read a snapshot that expiry
	// removes; under MinOrphanAge it is refused unless DryRun.
	OlderThan time.Duration
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// AbandonRuns are run ids whose run folders' unreferenced data files
	// may be deleted: a rerun of such a run id is no longer promised to
	// append the files committed before a crash. The folders' s3once
	// objects (the commit markers among them) stay.
	AbandonRuns []string
	// Now is the time ages are measured from (zero: the local clock). A
	// file's age is Now minus the modification time the bucket reports.
	Now time.Time
}

// OrphanReport is what RemoveOrphans did (or, in a dry run, would do).
type OrphanReport struct {
	// Deleted are the s3:// URIs of the files deleted, sorted.
	Deleted []string
	// DeletedBytes is their total size.
	DeletedBytes int64
	// Listed is how many objects the table's location holds, Referenced
	// how many of them the table's metadata names.
	Listed, Referenced int
	// KeptBookkeeping: s3once's own objects and other hidden objects (a
	// path segment below the location starts with '_' or '.'), and any
	// key the listing returned outside the location.
	KeptBookkeeping int
	// KeptYoung: unreferenced files younger than the safety age.
	KeptYoung int
	// KeptRunFolder: unreferenced files in the folder of a run not listed
	// in AbandonRuns.
	KeptRunFolder int
	// DryRun is Orphans.DryRun.
	DryRun bool
}

// RemoveOrphans deletes the files under the table's location that the
// table's metadata does not reference and that are older than the safety
// age: manifest lists and manifests of refused commits and of expired
// snapshots, metadata files no longer in the metadata log, data files of
// expired snapshots, and any other file no snapshot the table keeps names.
// Referenced are the current metadata file and those its metadata log
// lists, statistics files, and, for every snapshot the table keeps (on any
// branch or tag, or none), its manifest list, its manifests and the data
// and delete files their live entries name.
//
// It never deletes:
//
//   - s3once's bookkeeping and other hidden objects: any key with a path
//     segment below the location starting with '_' or '.' (settings
//     markers, partition manifests, completion markers and the table
//     commit markers, which after expiry are the only record of a run:
//     docs/design.md, "Run ids and the horizon");
//   - a file younger than the safety age. This is also what protects the
//     files of a commit that may still land (a round staged but not yet
//     committed, or one whose answer was lost): no manifest or metadata
//     file of such a commit is older than the commit's time in flight,
//     which the age must exceed;
//   - a file in a run folder (<table location>/data/<run id>/, any folder
//     below data/ named like a run id) unless that run id is in
//     AbandonRuns: docs/guarantees.md promises that a rerun with the same
//     run id appends the files committed before a crash;
//   - anything outside the table's location. It lists objects only: it
//     aborts no multipart upload and touches no staging object (the sink's
//     side objects are `s3once sweep`'s).
//
// The location is listed first and the table loaded after, so a file that
// a commit landed before the load references is kept.
//
// It lists and deletes through the table's own file IO (the catalog's S3
// settings and the AWS configuration Open was given), not iceberg-go's
// Table.DeleteOrphanFiles: that one deletes every unreferenced object
// (s3once's markers included) and has no way to keep run folders, to
// measure age from a given time, or to say why a file was kept.
func (t *Table) RemoveOrphans(ctx context.Context, o Orphans) (OrphanReport, error) {
	name := strings.Join(t.ident, ".")
	rep := OrphanReport{DryRun: o.DryRun}
	fail := func(format string, args ...any) (OrphanReport, error) {
		return rep, fmt.Errorf("s3once iceberg: remove orphan files of the table %s: "+format, append([]any{name}, args...)...)
	}
	age := o.OlderThan
	if age == 0 {
		age = DefaultOrphanAge
	}
	if age < 0 || (age < MinOrphanAge && !o.DryRun) {
		return fail("a safety age of %v is refused: give at least %v (more than the longest time a commit may stay in flight or a query may read an expired snapshot), or a dry run", age, MinOrphanAge)
	}
	abandoned := map[string]bool{}
	for _, id := range o.AbandonRuns {
		if err := CheckRunID(id); err != nil {
			return fail("abandon run: %w", err)
		}
		abandoned[id] = true
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	cutoff := now.Add(-age)
	ctx = t.withAWS(ctx)

	tbl, err := t.reload(ctx) // for its file IO

	if err != nil {
		return rep, err
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fail("the table's file IO: %w", err)
	}
	walker, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return fail("the table's file IO (%T) cannot list the location", fsys)
	}
	type object struct {
		uri, key string
		size     int64
		modified time.Time
	}
	var objects []object
	err = walker.WalkDir(t.location, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() || strings.HasSuffix(path, "/") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		bucket, key := t.bucket, path
		if strings.Contains(path, "://") {
			if bucket, key, err = splitS3(path); err != nil {
				return err
			}
		}
		objects = append(objects, object{uri: "s3://" + bucket + "/" + key, key: bucket + "/" + key, size: info.Size(), modified: info.ModTime()})
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail("list %s: %w; nothing was deleted", t.location, err)
	}
	rep.Listed = len(objects)
	t.step("orphans-listed", 0)

	// Load after listing: a file that a commit which landed before this
	// load references is seen referenced.
	if tbl, err = t.reload(ctx); err != nil {
		return rep, err
	}
	referenced, err := referencedFiles(tbl, fsys)
	if err != nil {
		return fail("%w; nothing was deleted", err)
	}

	root := t.bucket + "/"
	if t.path != "" {
		root += t.path + "/"
	}
	var doomed []object
	for _, obj := range objects {
		rel, below := strings.CutPrefix(obj.key, root)
		switch {
		case !below:
			// A key the listing returned outside the location: not ours.
			rep.KeptBookkeeping++
		case hiddenKey(rel):
			rep.KeptBookkeeping++
		case referenced[obj.key]:
			rep.Referenced++
		case !obj.modified.Before(cutoff):
			rep.KeptYoung++
		case inRunFolder(rel, abandoned):
			rep.KeptRunFolder++
		default:
			doomed = append(doomed, obj)
		}
	}
	slices.SortFunc(doomed, func(a, b object) int { return strings.Compare(a.uri, b.uri) })
	for _, obj := range doomed {
		if !o.DryRun {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			if err := fsys.Remove(obj.uri); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fail("delete %s: %w (%d files deleted before it; running it again is safe)", obj.uri, err, len(rep.Deleted))
			}
			t.step("orphans-deleted", len(rep.Deleted)+1)
		}
		rep.Deleted = append(rep.Deleted, obj.uri)
		rep.DeletedBytes += obj.size
	}
	return rep, nil
}

// hiddenKey reports whether a key below the table's location has a path
// segment starting with '_' or '.': s3once's markers and manifests, and
// what query engines and Iceberg's own orphan removal treat as hidden.
func hiddenKey(rel string) bool {
	for seg := range strings.SplitSeq(rel, "/") {
		if strings.HasPrefix(seg, "_") || strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

// inRunFolder reports whether a key below the table's location lies in
// the folder of a run (data/<run id>/...) that is not abandoned. Any
// folder below data/ named like a run id counts: a run's folder cannot be
// told from another writer's partition folder without reading it, and
// keeping a file is the safe mistake.
func inRunFolder(rel string, abandoned map[string]bool) bool {
	rest, ok := strings.CutPrefix(rel, "data/")
	if !ok {
		return false
	}
	run, _, ok := strings.Cut(rest, "/")
	return ok && CheckRunID(run) == nil && !abandoned[run]
}

// referencedFiles is every file the table's metadata names, as
// bucket/key: the current metadata file and the metadata log's, the
// statistics files, and each kept snapshot's manifest list, manifests and
// the files of their live entries (an entry marked deleted names a file
// that an older snapshot holds live, if any keeps it).
func referencedFiles(tbl *table.Table, fsys icebergio.IO) (map[string]bool, error) {
	refs := map[string]bool{}
	add := func(uri string) {
		if _, rest, ok := strings.Cut(uri, "://"); ok {
			refs[rest] = true
		}
	}
	md := tbl.Metadata()
	add(tbl.MetadataLocation())
	for e := range md.PreviousFiles() {
		add(e.MetadataFile)
	}
	for s := range md.Statistics() {
		add(s.StatisticsPath)
	}
	for s := range md.PartitionStatistics() {
		add(s.StatisticsPath)
	}
	seen := map[string]bool{}
	for _, snap := range md.Snapshots() {
		add(snap.ManifestList)
		manifests, err := snap.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("read the manifest list %s of snapshot %d: %w", snap.ManifestList, snap.SnapshotID, err)
		}
		for _, m := range manifests {
			if seen[m.FilePath()] {
				continue
			}
			seen[m.FilePath()] = true
			add(m.FilePath())
			entries, err := m.FetchEntries(fsys, true)
			if err != nil {
				return nil, fmt.Errorf("read the manifest %s: %w", m.FilePath(), err)
			}
			for _, e := range entries {
				add(e.DataFile().FilePath())
			}
		}
	}
	return refs, nil
}
