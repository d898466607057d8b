package sink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/recoverable"
)

func init() {
	register.DoFn4x1[context.Context, int, func(*pendingFile) bool, func(pendingFile), error](&barrierFn{})
	register.Iter1[pendingFile]()
}

// barrierLooks bounds the barrier's S3 calls in flight.
const barrierLooks = 16

// metricBarrierFiles counts the files the run-wide barrier checked; of
// those, metricBarrierKept the ones whose key already held the same bytes
// (kept from an earlier run).
var (
	metricBarrierFiles = beam.NewCounter("s3once", "barrier_files")
	metricBarrierKept  = beam.NewCounter("s3once", "barrier_kept")
)

// hintChangedRerun is the barrier's advice when a run would put other bytes
// under names an earlier run committed in the folder prefix.
func hintChangedRerun(prefix string) string {
	return "nothing of this run was committed and its uploads were aborted, so the folder is as the earlier run left it. " +
		"The folder holds files of another input or of other byte-affecting settings (Format, Compression or its library's version, " +
		"Shards, MaxBatchBytes, MaxFileBytes, MaxFileRecords, CheckpointBytes): when the input or the settings change, " + freshPrefix(prefix) + "; " +
		"to replace the folder's files instead, delete them first"
}

// inputBoundedness tells whether an input is bounded, and whether Beam
// lets the sink know (effectivelyBounded); tests stand in for a Beam that
// hides it.
var inputBoundedness = effectivelyBounded

// barrierApplies tells whether Write puts the run-wide barrier before its
// commit stage: the input is bounded (effectivelyBounded: an input that
// Beam marks unbounded only because another s3once Write's writer is
// upstream of it counts as bounded), in any window, and no file is
// committed at bundle finalization (which would commit before the
// barrier). why says, for the build-time log, which guarantee applies and
// why.
func barrierApplies(st settings, s beam.Scope, col beam.PCollection) (applies bool, why string) {
	if st.FinalizeCommit == FinalizeAlways {
		return false, "files are committed at bundle finalization (FinalizeCommit resolved to \"always\"), before any run-wide barrier could run"
	}
	bounded, known := inputBoundedness(s, col)
	switch {
	case !known:
		return false, "this Beam release hides whether the input is bounded"
	case !bounded:
		return false, "the input is unbounded: a run has no end to wait for"
	}
	return true, "the input is bounded"
}

// logGuarantee says, once per Write while the pipeline is built, how a
// changed rerun into the folder is refused: by the run-wide barrier before
// any file is committed, or file by file at commit.
func logGuarantee(st settings, applies bool, why string) {
	where := "s3://" + st.Bucket + "/" + ownkeys.Folder(st.Prefix)
	if applies {
		log.Infof(context.Background(), "s3once sink: %s: %s, so a rerun that would change a file is refused before any file is committed (run-wide barrier); FileResults come out in the global window, their window and pane as fields", where, why)
		return
	}
	log.Infof(context.Background(), "s3once sink: %s: %s, so a rerun that would change a file is refused file by file at commit (If-None-Match): files committed before the refusal stay", where, why)
}

// withBarrier gathers every pending file of the run into one element, checks
// them all (barrierFn) and passes them on only if every key is free or
// already holds the file's bytes. The files move into the global window
// (with its default trigger, so that one pane holds them all): every window
// of bounded input ends, so the global window's one pane comes once the
// whole writer stage is done, and it holds the files of every window. A
// file's window and pane stay in its name and its FileResult (Window,
// Pane), which is all the later stages read: the commit stage needs only
// the token, and the completion markers group the results by their Window
// field. From the barrier on, the files and their FileResults are in the
// global window.
//
// marker is the folder's settings marker (encodeSettings), which the
// barrier compares and writes; empty leaves the marker alone.
func withBarrier(s beam.Scope, st settings, pending beam.PCollection, marker []byte, ext string) (beam.PCollection, error) {
	s = s.Scope("Barrier")
	global, err := beam.TryWindowInto(s, window.NewGlobalWindows(), pending)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("s3once sink: %w", err)
	}
	keyed, err := single(beam.TryParDo(s, addBarrierKey, global))
	if err != nil {
		return beam.PCollection{}, err
	}
	all, err := beam.TryGroupByKey(s, keyed)
	if err != nil {
		return beam.PCollection{}, fmt.Errorf("s3once sink: %w", err)
	}
	return single(beam.TryParDo(s, &barrierFn{S: st.folder, Settings: marker, Ext: ext}, all))
}

func init() { register.Function1x2(addBarrierKey) }

// addBarrierKey puts every pending file under one key.
func addBarrierKey(p pendingFile) (int, pendingFile) { return 0, p }

// barrierFn is the run-wide barrier: it receives every file of the run,
// closed and not yet committed, and before any of them is committed it
// checks, in order: the folder's settings marker (judgeFolder); every
// partition (destination, window) the run writes, which must hold no
// s3once file, of any extension, that the run does not produce, and whose
// manifest, where it exists, must list exactly the run's files of it
// (ErrPartitionChanged, ErrManifestDamaged); every file's key, which must be free or hold
// exactly the file's bytes (size and CRC64NVME; committer.ErrKeyTaken);
// every window the run writes, whose completion marker, where it exists,
// must name every file of the run in it (ErrWindowComplete).
// When all hold, it writes the marker of a new folder and emits the files
// to the commit stage. Otherwise it commits nothing: it discards every
// upload of the run (its own, never completed) and fails. A retry of the
// bundle finds the same and fails the same way.
type barrierFn struct {
	S folder `json:"s"`
	// Settings is the folder's settings marker for this run (settings_marker.go).
	Settings []byte `json:"settings,omitempty"`
	// Ext is the extension of this run's files (".jsonl.gz"). The checks
	// count every s3once file of a partition, whatever its extension; only
	// the mutant PartitionOwnExtOnly reads it.
	Ext string `json:"ext,omitempty"`

	c      *committer.Committer
	b      *s3bucket.Client
	marker markerSettings
}

func (f *barrierFn) Setup(ctx context.Context) error {
	return f.S.setUp(ctx, func(c *committer.Committer, b *s3bucket.Client, _ s3API) error {
		f.c, f.b = c, b
		return f.decodeSettings()
	})
}

// barrierFile is one file at the barrier: its token and what its key holds.
type barrierFile struct {
	p      pendingFile
	cr     recoverable.CommitToken
	holds  s3bucket.Holding
	looked error
}

func (f *barrierFn) ProcessElement(ctx context.Context, _ int, files func(*pendingFile) bool, emit func(pendingFile)) error {
	var all []*barrierFile
	var p pendingFile
	for files(&p) {
		cr, err := coder.DecodeCommitToken(p.Commit)
		if err != nil {
			return fmt.Errorf("s3once sink: barrier: commit token of s3://%s/%s: %w", p.Result.Bucket, p.Result.Key, err)
		}
		if err := checkOwnToken(f.S, cr); err != nil {
			return fmt.Errorf("s3once sink: barrier: %w", err)
		}
		all = append(all, &barrierFile{p: p, cr: cr})
		p = pendingFile{}
	}
	slices.SortFunc(all, func(a, b *barrierFile) int { return strings.Compare(a.cr.Key, b.cr.Key) })
	metricBarrierFiles.Inc(ctx, int64(len(all)))

	// The settings marker (settings_marker.go): other settings recorded in the
	// folder, or a folder of another output version, refuse the run before
	// its partitions and keys are looked at.
	state := folderMarked
	if f.marker != nil {
		var err error
		if state, err = judgeFolder(ctx, f.b, f.S.Bucket, f.S.Prefix, f.marker, settingsRefusedDone); err != nil {
			return f.refuseSettings(ctx, all, err)
		}
	}
	if err := f.checkPartitions(ctx, all); err != nil {
		if !errors.Is(err, ErrPartitionChanged) && !errors.Is(err, ErrManifestDamaged) {
			// A look that failed: nothing was judged, so the bundle fails
			// for the runner to retry, with nothing committed or removed.
			return fmt.Errorf("s3once sink: %w", err)
		}
		return f.refuse(ctx, all, err)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(barrierLooks)
	for _, bf := range all {
		g.Go(func() error {
			bf.holds, bf.looked = f.b.Lookup(gctx, bf.cr.Bucket, bf.cr.Key, bf.cr.Size())
			return nil
		})
	}
	_ = g.Wait()
	var taken []*barrierFile
	kept := 0
	for _, bf := range all {
		if bf.looked != nil {
			return fmt.Errorf("s3once sink: barrier: %w", bf.looked)
		}
		switch {
		case bf.holds.Is(bf.cr.Size(), bf.cr.CRC()):
			kept++
		case bf.holds.Exists:
			taken = append(taken, bf)
		}
	}
	if len(taken) > 0 {
		first := taken[0]
		return f.refuse(ctx, all, &recoverable.Error{
			Op: "commit", Bucket: first.cr.Bucket, Key: first.cr.Key, UploadID: first.cr.UploadID,
			Err: fmt.Errorf("%w: the key holds %s, this run's file there is %d bytes with CRC64NVME %016x; %d of this run's %d files would replace other bytes",
				committer.ErrKeyTaken, first.holds, first.cr.Size(), first.cr.CRC(), len(taken), len(all)),
			Hint: hintChangedRerun(f.S.Prefix),
		})
	}
	if err := f.checkMarkers(ctx, all); err != nil {
		if !errors.Is(err, ErrWindowComplete) {
			return fmt.Errorf("s3once sink: barrier: %w", err)
		}
		return f.refuse(ctx, all, err)
	}
	// A new folder gets this run's marker, now that every key is free or
	// holds this run's bytes; before any file is committed.
	if f.marker != nil && state == folderNew {
		if err := stampFolder(ctx, f.b, f.S.Bucket, f.S.Prefix, f.marker, settingsRefusedDone); err != nil {
			return f.refuseSettings(ctx, all, err)
		}
	}
	metricBarrierKept.Inc(ctx, int64(kept))
	for _, bf := range all {
		emit(bf.p)
	}
	return nil
}

// refuse ends a run that must not commit: every upload of the run is
// discarded, and err is returned with what could not be removed.
func (f *barrierFn) refuse(ctx context.Context, all []*barrierFile, err error) error {
	if cleanup := f.discard(ctx, all); cleanup != nil {
		err = fmt.Errorf("%w (and removing this run's uploads failed, the sweep will remove them: %w)", err, cleanup)
	}
	if strings.HasPrefix(err.Error(), "s3once sink: ") {
		return err // the sink's own refusals name it already
	}
	return fmt.Errorf("s3once sink: %w", err)
}

// discard aborts every file's upload and deletes its side objects
// (committer.Discard: detached, under the committer's one clean-up bound).
func (f *barrierFn) discard(ctx context.Context, all []*barrierFile) error {
	crs := make([]recoverable.CommitToken, len(all))
	for i, bf := range all {
		crs[i] = bf.cr
	}
	return f.c.Discard(ctx, crs)
}

// decodeSettings reads the marker the DoFn carries (settings_marker.go).
func (f *barrierFn) decodeSettings() (err error) {
	if len(f.Settings) > 0 {
		if f.marker, err = decodeSettings(f.Settings); err != nil {
			return fmt.Errorf("s3once sink: barrier: the run's settings marker: %w", err)
		}
	}
	return nil
}

// refuseSettings ends a run whose settings marker check failed: when the
// folder holds other settings, or a damaged marker, every upload of the
// run is discarded, as for a taken key; any other failure (reading the
// marker) fails the bundle for the runner to retry, with nothing committed.
func (f *barrierFn) refuseSettings(ctx context.Context, all []*barrierFile, err error) error {
	if !errors.Is(err, ErrSettingsChanged) && !errors.Is(err, ErrSettingsDamaged) {
		return fmt.Errorf("s3once sink: barrier: %w", err)
	}
	if cleanup := f.discard(ctx, all); cleanup != nil {
		return fmt.Errorf("%w (and removing this run's uploads failed, the sweep will remove them: %w)", err, cleanup)
	}
	return err
}

// checkMarkers refuses the run where a window it writes has a completion
// marker that does not name one of the run's files in it (markerGuard):
// the window is complete. all holds the files as ProcessElement looked
// them up. It reads each window's marker once, 16 at a time.
func (f *barrierFn) checkMarkers(ctx context.Context, all []*barrierFile) error {
	windows := map[string][]*barrierFile{}
	for _, bf := range all {
		windows[bf.p.Result.Window] = append(windows[bf.p.Result.Window], bf)
	}
	var guard markerGuard
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(barrierLooks)
	for w := range windows {
		g.Go(func() error {
			_, err := guard.marker(gctx, f.b, f.S.Bucket, f.S.Prefix, w)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, w := range slices.Sorted(maps.Keys(windows)) {
		m := guard.windows[w] // every one read above
		if !m.found {
			continue
		}
		e := m.refusal(f.S.Bucket, f.S.Prefix, w, settingsRefusedDone)
		for _, bf := range windows[w] { // sorted by key
			named, _ := m.names(bf.cr.Key, bf.cr.Size(), bf.cr.CRC(), func() (bool, error) { return bf.holds.Exists, nil })
			if !named {
				shownAdd(&e.Keys, &e.Count, bf.cr.Key)
			}
		}
		if e.Count > 0 {
			return e
		}
	}
	return nil
}
