package icebergtable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/parquetbody"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/recoverable"
	"github.com/s3once/s3once/sink"
)

// Snapshot summary properties of a compaction's replace snapshot: its
// idempotency key and what it did.
const (
	PropCompactionID = "s3once.compaction-id"
	PropFilesRead    = "s3once.compaction-files-read"
	PropFilesWritten = "s3once.compaction-files-written"
)

// Compaction's defaults.
const (
	// DefaultTargetFileBytes is the size compacted files are packed to.
	DefaultTargetFileBytes = 128 << 20
	// DefaultMinFiles is how many files smaller than the target a
	// partition must hold to be compacted (Iceberg's own min-input-files).
	DefaultMinFiles = 5
)

// ErrCompactionVoid is wrapped by the error of a compaction whose plan
// names a file the table no longer holds live, and that did not land.
var ErrCompactionVoid = errors.New("s3once iceberg: the compaction's plan is void")

// Compaction is what Compact rewrites.
type Compaction struct {
	// ID is the compaction's idempotency key (required; checked like a
	// run id, CheckRunID): a retry or rerun with the same ID finds the
	// compaction's snapshot, or its plan, and never rewrites twice. Give
	// each compaction a new one (a date and hour, a counter).
	ID string
	// TargetFileBytes is the size a compacted file is packed to, from the
	// input files' sizes (0: DefaultTargetFileBytes).
	TargetFileBytes int64
	// MinFiles: a partition is compacted only when it holds at least this
	// many data files smaller than TargetFileBytes (0: DefaultMinFiles;
	// at least 2).
	MinFiles int
	// StagingPrefix is where the compacted files' uploads keep their side
	// objects and the committer its probe, in the table's bucket, as
	// sink.Config.StagingPrefix (empty: the sink's default).
	StagingPrefix string
}

// CompactionReport is what Compact did.
type CompactionReport struct {
	// FilesRead are the data files the compaction replaced, FilesWritten
	// the files it wrote in their place; BytesRewritten the size of the
	// files read.
	FilesRead, FilesWritten int
	BytesRewritten          int64
	// Partitions is the number of partitions compacted.
	Partitions int
	// Refused is the number of commit rounds the catalog refused because
	// another writer committed first (each followed by a reload, a check
	// that the files read are still live, and a new round).
	Refused int
	// Landed is true when the compaction was found already in the table
	// (a retry or rerun): nothing was written or committed.
	Landed bool
	// SnapshotID is the compaction's replace snapshot (0: nothing to
	// compact).
	SnapshotID int64
}

// compactionPlan is the hidden plan object of a compaction
// (<table location>/compacted/<id>/_plan): what it reads and writes.
type compactionPlan struct {
	Version  int            `json:"version"`
	Table    string         `json:"table"`
	Snapshot int64          `json:"snapshot"`
	Groups   []compactGroup `json:"groups"`
}

// compactGroup is one output file and the inputs it is made of.
type compactGroup struct {
	// Destination is the partition's path ("At_day=2024-06-01"), as
	// PartitionPath gives it; Output the file's key.
	Destination string   `json:"destination"`
	Output      string   `json:"output"`
	Inputs      []string `json:"inputs"`
	InputBytes  int64    `json:"inputBytes"`
}

// planMaxBytes bounds the plan object read back.
const planMaxBytes = 64 << 20

// Compact rewrites each partition's small data files into files of about
// c.TargetFileBytes and replaces them in one snapshot, exactly once per
// c.ID, beside live writers:
//
//  1. It walks main's ancestry for a snapshot whose summary holds c.ID
//     (PropCompactionID): found, it has landed, and nothing is done.
//  2. It reads the compaction's plan, <table location>/compacted/<ID>/_plan;
//     without one it plans from the current snapshot (per partition of
//     the current spec holding at least c.MinFiles files smaller than the
//     target, the small files bin-packed in path order into groups of
//     about the target, groups of one file left alone) and writes the plan
//     with a conditional put (If-None-Match), taking the one that is there
//     if another attempt wrote it first. A retry therefore reads and
//     writes exactly what the first attempt chose.
//  3. Each group is written as one Parquet file at
//     <table location>/compacted/<ID>/<partition>/part-NNNNN.parquet: its
//     inputs' row groups copied with a writer of their own schema (field
//     ids and types kept, records not decoded), through the sink's
//     recoverable multipart stream and committed by the committer, which
//     completes the upload only where the key is empty and proves that
//     the key then holds the stream's size and CRC64NVME. These are the
//     same verified, conditional commits as the sink's files; a single
//     PutOnce would hold a whole 128 MiB file in memory and read it all
//     back to compare. A group whose file is already there (an earlier
//     attempt) is not written again. Each file's column metrics and split
//     offsets come from its footer, read back from the bucket, as the
//     table stage takes them from the sink's (dataFilesOf).
//  4. One transaction replaces exactly the inputs with the outputs
//     (iceberg-go's Transaction.ReplaceDataFilesWithDataFiles: it deletes
//     and adds given data files in one overwrite snapshot; RewriteDataFiles
//     would write the files itself through Arrow, under names of its own,
//     without conditional or verified commits), with c.ID in the summary.
//     The commit asserts that main has not moved. When the catalog
//     refuses it because another writer committed first, the table is
//     reloaded, the ID looked for, every input checked to be still live,
//     and the round made again, the files not rewritten. When the answer
//     is lost or ambiguous, the next round looks for the ID before
//     anything else; no written file is ever deleted here.
//
// Files appended after the plan are never read or replaced. A crash
// anywhere leaves the inputs live (the replace did not land) or the
// outputs (it did), never both and never neither; a rerun with the same
// ID finishes it. A plan naming an input no longer live (another
// compaction, or an expiry of the branch, replaced it) is void: Compact
// returns ErrCompactionVoid and changes nothing; its written files are
// orphans that RemoveOrphans deletes.
//
// The compacted files lie outside every run folder, so a run's folder
// keeps only its own files and orphan removal may delete them once a
// later compaction or expiry leaves them unreferenced. An abandoned
// multipart upload (a process killed while writing a file) is under a key
// of the compaction's own: give the compacted/ prefix a lifecycle rule
// that aborts incomplete uploads.
//
// S3 is reached as the table's file IO reaches it (the catalog's S3
// properties and the AWS configuration of WithS3).
func (t *Table) Compact(ctx context.Context, c Compaction) (CompactionReport, error) {
	name := strings.Join(t.ident, ".")
	var rep CompactionReport
	fail := func(format string, args ...any) (CompactionReport, error) {
		return rep, fmt.Errorf("s3once iceberg: compaction %q of the table %s: "+format, append([]any{c.ID, name}, args...)...)
	}
	if err := CheckRunID(c.ID); err != nil {
		return fail("its id: %w", err)
	}
	if c.TargetFileBytes == 0 {
		c.TargetFileBytes = DefaultTargetFileBytes
	}
	if c.MinFiles == 0 {
		c.MinFiles = DefaultMinFiles
	}
	if c.TargetFileBytes < 1<<20 || c.MinFiles < 2 {
		return fail("a target of %d bytes and %d files is refused: give at least 1 MiB and 2 files", c.TargetFileBytes, c.MinFiles)
	}
	ctx = t.withAWS(ctx)
	t.takeHead() // the next Commit reloads

	tbl, err := t.reload(ctx)
	if err != nil {
		return rep, err
	}
	if snap := findCompaction(tbl, c.ID); snap != nil {
		return landedReport(snap), nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fail("the table's file IO: %w", err)
	}
	client, err := s3Client(fsys)
	if err != nil {
		return fail("%w", err)
	}
	bucket := s3bucket.New(client, s3bucket.Options{})
	t.step("plan", 0)
	plan, err := t.plan(ctx, tbl, fsys, bucket, c)
	if err != nil {
		return fail("%w", err)
	}
	t.step("planned", 0)
	if len(plan.Groups) == 0 {
		return rep, nil
	}
	parts := map[string]bool{}
	for _, g := range plan.Groups {
		parts[g.Destination] = true
		rep.FilesRead += len(g.Inputs)
		rep.BytesRewritten += g.InputBytes
	}
	rep.Partitions, rep.FilesWritten = len(parts), len(plan.Groups)

	// The plan's inputs must be live before anything is written: a void
	// plan writes nothing more.
	live, err := liveDataFiles(tbl, fsys)
	if err != nil {
		return fail("%w", err)
	}
	if t.outputsLive(plan, live) {
		// Landed, and its snapshot since expired: the table holds the
		// outputs, which only this compaction's replace adds.
		rep.Landed = true
		return rep, nil
	}
	if err := t.checkPlan(tbl, plan, live, c.ID); err != nil {
		return rep, err
	}
	outputs, err := t.writeGroups(ctx, fsys, client, plan, c)
	if err != nil {
		return fail("%w; running it again with the same id goes on from the files written", err)
	}

	backoff := 50 * time.Millisecond
	for round := 1; ; round++ {
		if round > 1 {
			if tbl, err = t.reload(ctx); err != nil {
				return rep, err
			}
			if snap := findCompaction(tbl, c.ID); snap != nil {
				rep.Landed, rep.SnapshotID = false, snap.SnapshotID
				return rep, nil
			}
			if live, err = liveDataFiles(tbl, fsys); err != nil {
				return fail("%w", err)
			}
			if err := t.checkPlan(tbl, plan, live, c.ID); err != nil {
				return rep, err
			}
		}
		var deletes []iceberg.DataFile
		for _, g := range plan.Groups {
			for _, in := range g.Inputs {
				deletes = append(deletes, live[in])
			}
		}
		adds, err := dataFilesOf(tbl, outputs)
		if err != nil {
			return fail("%w", err)
		}
		txn := tbl.NewTransaction()
		props := iceberg.Properties{PropCompactionID: c.ID, PropFilesRead: strconv.Itoa(rep.FilesRead), PropFilesWritten: strconv.Itoa(rep.FilesWritten)}
		if err := txn.ReplaceDataFilesWithDataFiles(ctx, deletes, adds, props); err != nil {
			return fail("stage the replace of %d files by %d: %w", len(deletes), len(adds), err)
		}
		if t.beforeCommit != nil {
			t.beforeCommit()
		}
		committed, err := txn.Commit(ctx)
		refused := conflict(err)
		if refused && !t.mayHaveLanded(ctx, txn) {
			discardStaged(ctx, txn, tbl)
		}
		if refused {
			rep.Refused++
		}
		if err != nil && (refused || transient(err)) && round < maxCommitRounds {
			if !refused {
				if err := sleep(ctx, backoff+rand.N(backoff)); err != nil {
					return rep, err
				}
				backoff = min(2*backoff, 2*time.Second)
			}
			continue
		}
		if err != nil {
			return fail("commit the replace (after %d rounds; running it again with the same id finds the snapshot if it landed, else commits it; the files written stay): %w", round, err)
		}
		rep.SnapshotID = committed.CurrentSnapshot().SnapshotID
		return rep, nil
	}
}

func (t *Table) step(step string, n int) {
	if t.onStep != nil {
		t.onStep(step, n)
	}
}

// findCompaction walks main's ancestry for the compaction's snapshot.
func findCompaction(tbl *table.Table, id string) *table.Snapshot {
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return nil
	}
	for _, s := range table.AncestorsOf(cur.SnapshotID, tbl.Metadata().SnapshotByID) {
		if s.Summary != nil && s.Summary.Properties[PropCompactionID] == id {
			return &s
		}
	}
	return nil
}

// landedReport is the report of a compaction found in the table.
func landedReport(snap *table.Snapshot) CompactionReport {
	read, _ := strconv.Atoi(snap.Summary.Properties[PropFilesRead])
	written, _ := strconv.Atoi(snap.Summary.Properties[PropFilesWritten])
	return CompactionReport{Landed: true, SnapshotID: snap.SnapshotID, FilesRead: read, FilesWritten: written}
}

// s3Client is the S3 client of the table's file IO (iceberg-go's S3 file
// IO is a gocloud bucket over an *s3.Client).
func s3Client(fsys icebergio.IO) (*s3.Client, error) {
	as, ok := fsys.(interface{ As(any) bool })
	var client *s3.Client
	if !ok || !as.As(&client) || client == nil {
		return nil, fmt.Errorf("the table's file IO (%T) is not S3's: compaction writes its files to S3", fsys)
	}
	return client, nil
}

// liveDataFiles are the current snapshot's live data files, by path. A
// table with delete files is refused: compaction here rewrites data files
// only.
func liveDataFiles(tbl *table.Table, fsys icebergio.IO) (map[string]iceberg.DataFile, error) {
	live := map[string]iceberg.DataFile{}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return live, nil
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("read the manifest list %s: %w", snap.ManifestList, err)
	}
	for _, m := range manifests {
		entries, err := m.FetchEntries(fsys, true)
		if err != nil {
			return nil, fmt.Errorf("read the manifest %s: %w", m.FilePath(), err)
		}
		for _, e := range entries {
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentData {
				return nil, fmt.Errorf("the table holds delete files (%s): compaction rewrites tables without row deletes only", df.FilePath())
			}
			live[df.FilePath()] = df
		}
	}
	return live, nil
}

// outputsLive reports whether the table holds every file the plan
// writes live: the compaction landed (its snapshot may since have been
// expired, so the summary look-up missed it).
func (t *Table) outputsLive(plan compactionPlan, live map[string]iceberg.DataFile) bool {
	for _, g := range plan.Groups {
		if _, ok := live["s3://"+t.bucket+"/"+g.Output]; !ok {
			return false
		}
	}
	return len(plan.Groups) > 0
}

// checkPlan refuses a plan that names an input the table no longer holds
// live (the compaction did not land: the caller looked first).
func (t *Table) checkPlan(tbl *table.Table, plan compactionPlan, live map[string]iceberg.DataFile, id string) error {
	for _, g := range plan.Groups {
		for _, in := range g.Inputs {
			if _, ok := live[in]; !ok {
				return fmt.Errorf("%w: compaction %q of the table %s planned to replace %s, which the table's current snapshot %d no longer holds (another compaction or a rewrite replaced it), and the compaction did not land; nothing was committed. Run a new compaction with another id; the files this one wrote are orphans that remove-orphans deletes",
					ErrCompactionVoid, id, strings.Join(t.ident, "."), in, currentID(tbl))
			}
		}
	}
	return nil
}

func currentID(tbl *table.Table) int64 {
	if s := tbl.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}

// compactRoot is the key prefix of a compaction's files: outside every
// run folder (data/<run id>/) and under no hidden segment, so that orphan
// removal may delete them once nothing references them.
func (t *Table) compactRoot(id string) string {
	p := "compacted/" + id
	if t.path != "" {
		p = t.path + "/" + p
	}
	return p
}

// plan reads the compaction's plan, or makes it from the table and writes
// it once.
func (t *Table) plan(ctx context.Context, tbl *table.Table, fsys icebergio.IO, bucket *s3bucket.Client, c Compaction) (compactionPlan, error) {
	var plan compactionPlan
	key := t.compactRoot(c.ID) + "/_plan"
	body, found, err := bucket.ReadObject(ctx, t.bucket, key, planMaxBytes)
	if err != nil {
		return plan, fmt.Errorf("read its plan: %w", err)
	}
	if !found {
		if plan, err = t.makePlan(tbl, fsys, c); err != nil {
			return plan, err
		}
		if len(plan.Groups) == 0 {
			return plan, nil
		}
		if body, err = json.Marshal(plan); err != nil {
			return plan, err
		}
		existing, written, err := bucket.PutOnce(ctx, t.bucket, key, body, "application/json", planMaxBytes)
		if err != nil {
			return plan, fmt.Errorf("write its plan: %w", err)
		}
		if written {
			return plan, nil
		}
		body = existing // another attempt planned first: its plan holds
	}
	plan = compactionPlan{}
	if err := json.Unmarshal(body, &plan); err != nil || plan.Version != 1 || plan.Table != strings.Join(t.ident, ".") {
		return plan, fmt.Errorf("its plan s3://%s/%s is not a plan of this table's compaction (%v): the id is taken; give the compaction another id", t.bucket, key, err)
	}
	return plan, nil
}

// makePlan bin-packs each partition's small files.
func (t *Table) makePlan(tbl *table.Table, fsys icebergio.IO, c Compaction) (compactionPlan, error) {
	plan := compactionPlan{Version: 1, Table: strings.Join(t.ident, "."), Snapshot: currentID(tbl)}
	live, err := liveDataFiles(tbl, fsys)
	if err != nil {
		return plan, err
	}
	spec := tbl.Spec()
	byPart := map[string][]iceberg.DataFile{}
	for _, df := range live {
		if df.FileFormat() != iceberg.ParquetFile || df.SpecID() != int32(spec.ID()) || df.FileSizeBytes() >= c.TargetFileBytes {
			continue
		}
		dest, ok := destinationOf(spec, df)
		if !ok {
			continue
		}
		byPart[dest] = append(byPart[dest], df)
	}
	root := t.compactRoot(c.ID)
	for _, dest := range slices.Sorted(maps.Keys(byPart)) {
		files := byPart[dest]
		if len(files) < c.MinFiles {
			continue
		}
		slices.SortFunc(files, func(a, b iceberg.DataFile) int { return strings.Compare(a.FilePath(), b.FilePath()) })
		var g compactGroup
		flush := func() {
			if len(g.Inputs) > 1 {
				dir := root
				if dest != "" {
					dir += "/" + dest
				}
				g.Destination = dest
				g.Output = fmt.Sprintf("%s/part-%05d.parquet", dir, len(plan.Groups))
				plan.Groups = append(plan.Groups, g)
			}
			g = compactGroup{}
		}
		for _, df := range files {
			if g.InputBytes > 0 && g.InputBytes+df.FileSizeBytes() > c.TargetFileBytes {
				flush()
			}
			g.Inputs = append(g.Inputs, df.FilePath())
			g.InputBytes += df.FileSizeBytes()
		}
		flush()
	}
	return plan, nil
}

// destinationOf is a data file's partition in PartitionPath's form, which
// partitionOf parses back; ok is false for a value of a transform or type
// the table stage does not write.
func destinationOf(spec iceberg.PartitionSpec, df iceberg.DataFile) (string, bool) {
	if spec.NumFields() == 0 {
		return "", true
	}
	part := df.Partition()
	var segs []string
	for _, pf := range spec.Fields() {
		v, ok := part[pf.FieldID]
		if !ok || v == nil {
			return "", false
		}
		var human string
		switch pf.Transform.(type) {
		case iceberg.DayTransform:
			n, ok := intValue(v)
			if !ok {
				return "", false
			}
			human = time.Unix(n*86400, 0).UTC().Format(dayLayout)
		case iceberg.HourTransform:
			n, ok := intValue(v)
			if !ok {
				return "", false
			}
			human = time.Unix(n*3600, 0).UTC().Format(hourLayout)
		case iceberg.IdentityTransform:
			switch x := v.(type) {
			case bool:
				human = strconv.FormatBool(x)
			case string:
				human = url.QueryEscape(x)
			default:
				n, ok := intValue(v)
				if !ok {
					return "", false
				}
				human = strconv.FormatInt(n, 10)
			}
		default:
			return "", false
		}
		segs = append(segs, url.QueryEscape(pf.Name)+"="+human)
	}
	return strings.Join(segs, "/"), true
}

func intValue(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case iceberg.Date:
		return int64(x), true
	}
	return 0, false
}

// writeGroups writes each group's file unless an earlier attempt did, and
// returns them as the sink reports files: their footers read back.
func (t *Table) writeGroups(ctx context.Context, fsys icebergio.IO, client *s3.Client, plan compactionPlan, c Compaction) ([]sink.FileResult, error) {
	w, err := recoverable.NewWriter(client, recoverable.Options{StagingPrefix: c.StagingPrefix})
	if err != nil {
		return nil, err
	}
	cm, err := committer.New(client, committer.Options{StagingPrefix: c.StagingPrefix})
	if err != nil {
		return nil, err
	}
	out := make([]sink.FileResult, 0, len(plan.Groups))
	for _, g := range plan.Groups {
		uri := "s3://" + t.bucket + "/" + g.Output
		r, found, err := readFooter(fsys, uri)
		if err != nil {
			return nil, err
		}
		if !found {
			if err := t.writeGroup(ctx, fsys, w, cm, g); err != nil {
				return nil, err
			}
			t.step("written", len(out)+1)
			if r, found, err = readFooter(fsys, uri); err != nil {
				return nil, err
			} else if !found {
				return nil, fmt.Errorf("%s was committed and is not there", uri)
			}
		}
		r.Bucket, r.Key, r.Destination = t.bucket, g.Output, g.Destination
		out = append(out, r)
	}
	return out, nil
}

// writeGroup copies the group's inputs into its output file.
func (t *Table) writeGroup(ctx context.Context, fsys icebergio.IO, w *recoverable.Writer, cm *committer.Committer, g compactGroup) (err error) {
	var inputs []*parquet.File
	for _, in := range g.Inputs {
		f, err := fsys.Open(in)
		if err != nil {
			return fmt.Errorf("open %s: %w", in, err)
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return fmt.Errorf("open %s: %w", in, err)
		}
		pf, err := parquet.OpenFile(f, info.Size())
		if err != nil {
			return fmt.Errorf("read %s: %w", in, err)
		}
		inputs = append(inputs, pf)
	}
	s, err := w.Open(ctx, t.bucket, g.Output, recoverable.ObjectOptions{})
	if err != nil {
		return err
	}
	defer func() {
		if derr := s.Dispose(context.WithoutCancel(ctx)); derr != nil && err == nil {
			err = derr
		}
	}()
	if _, err := parquetbody.Concat(s, inputs); err != nil {
		return fmt.Errorf("write s3://%s/%s: %w", t.bucket, g.Output, err)
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		return err
	}
	if _, err := cm.Commit(ctx, cr); err != nil {
		return err
	}
	return nil
}

// readFooter reads a Parquet file's footer through the table's file IO,
// as the sink reports a file it wrote; found is false where there is no
// file.
func readFooter(fsys icebergio.IO, uri string) (r sink.FileResult, found bool, err error) {
	f, err := fsys.Open(uri)
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("open %s: %w", uri, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return r, false, fmt.Errorf("open %s: %w", uri, err)
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return r, false, fmt.Errorf("read the footer of %s: %w", uri, err)
	}
	return footerResult(pf, info.Size()), true, nil
}

// footerResult is a Parquet file of size bytes as the sink reports one it
// wrote: its size, records and what its footer records.
func footerResult(pf *parquet.File, size int64) sink.FileResult {
	s := parquetbody.FileSummary(pf)
	r := sink.FileResult{Bytes: size, Records: pf.NumRows(), Footer: sink.ParquetFooter{RowGroupOffsets: s.SplitOffsets}}
	for _, c := range s.Columns {
		r.Footer.Columns = append(r.Footer.Columns, sink.ColumnStats{Path: c.Path, Bytes: c.Bytes, Values: c.Values, Nulls: c.Nulls, Min: c.Min, Max: c.Max, HasBounds: c.HasBounds})
	}
	return r
}
