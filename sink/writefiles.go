package sink

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/format"
	"github.com/s3once/s3once/internal/filebody"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/recoverable"
)

// s3API is what the writer and the committer call; *s3.Client satisfies it.
type s3API interface {
	recoverable.S3
	committer.S3
}

// How long the runner keeps a finalization callback, and how long the
// callback's commit may take.
const (
	finalizeExpiry  = 10 * time.Minute
	finalizeTimeout = 2 * time.Minute
)

// pendingFile is a closed file waiting for its commit: its encoded commit
// token (coder.EncodeCommitToken) and what the commit stage reports once it is
// committed.
type pendingFile struct {
	Commit []byte
	Result FileResult
}

// writeFilesFn writes each batch as one or more files. It is a splittable
// DoFn whose restriction (see restriction) is the records left to write and
// the open file's resume token. Every file it closes is emitted for the
// commit stage downstream (the guarantee). It does not ask for bundle
// finalization; finalizingWriteFilesFn is the same writer that does, and
// also commits each file in a bundle-finalization callback (the fast path).
// Config.FinalizeCommit picks one of the two.
type writeFilesFn struct {
	S writerSettings `json:"s"`

	writer    *recoverable.Writer
	committer *committer.Committer
	bucket    *s3bucket.Client
	bodies    filebody.Kind
	ext       string
	oo        recoverable.ObjectOptions

	// finalized is set once one of this instance's finalization callbacks
	// has run; from then on the instance registers none (see
	// registerCommit).
	finalized atomic.Bool

	// checkpointAt, when set (by tests), decides at each sync point whether
	// to checkpoint there, in place of CheckpointBytes and CheckpointInterval.
	checkpointAt func(next int64) bool
}

func (f *writeFilesFn) Setup(ctx context.Context) error {
	workerMemory.Limit(f.S.MaxWorkerMemory)
	w, err := f.S.worker(ctx)
	if err != nil {
		return err
	}
	f.committer, f.bucket = w.committer, w.bucket
	if f.writer, err = w.writer(f.S.streamOptions(), f.S.partBuffers()); err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	return f.init(w.client)
}

// init readies the DoFn over client, with its own stream writer,
// committer and bucket client unless it has them; tests call it directly.
func (f *writeFilesFn) init(client s3API) error {
	var err error
	if f.writer == nil {
		if f.writer, err = recoverable.NewWriter(client, f.S.streamOptions()); err != nil {
			return fmt.Errorf("s3once sink: %w", err)
		}
	}
	if f.committer == nil {
		if f.committer, err = committer.New(client, committer.Options{}); err != nil {
			return fmt.Errorf("s3once sink: %w", err)
		}
	}
	if f.bucket == nil {
		f.bucket = s3bucket.New(client, s3bucket.Options{})
	}
	recFormat, err := format.Lookup(f.S.Format)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	codec, err := format.LookupCodec(f.S.Compression)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	if f.bodies, err = f.S.bodyKind(recFormat, codec); err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	f.ext = recFormat.Extension() + codec.Extension()
	f.oo = recoverable.ObjectOptions{ContentType: recFormat.ContentType()}
	if ct := codec.ContentType(); ct != "" {
		f.oo.ContentType = ct
	}
	return nil
}

func (f *writeFilesFn) CreateInitialRestriction(b batch) restriction {
	n, _ := b.size()
	return restriction{End: n}
}

// SplitRestriction keeps each batch whole: its files are written in order by
// one worker, so that where files roll depends on the records alone.
func (f *writeFilesFn) SplitRestriction(_ batch, r restriction) []restriction {
	return []restriction{r}
}

// RestrictionSize is the number of records left.
func (f *writeFilesFn) RestrictionSize(_ batch, r restriction) float64 {
	return float64(r.End - r.Start)
}

func (f *writeFilesFn) CreateTracker(r restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(newTracker(r))
}

// ProcessElement writes the records of the restriction, in order. A file
// rolls before a record that would take it past MaxFileBytes, or when it
// holds MaxFileRecords. Every min(CheckpointBytes, 1 MiB) of records in a
// file is a sync point (the compressed member ends there), and so is every
// file's end; at a sync point, once CheckpointBytes of records (or
// CheckpointInterval) have passed since this call began, the writer makes
// the open file durable (persist), arms the tracker with the residual and
// returns a resume: the runner checkpoints the residual and hands it back
// later, perhaps to another worker.
func (f *writeFilesFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, b batch, emit func(pendingFile)) (sdf.ProcessContinuation, error) {
	return f.process(ctx, nil, rt, b, emit)
}

// finalizingWriteFilesFn is writeFilesFn asking for bundle finalization: it
// also commits every file it closes in a finalization callback (see
// registerCommit).
//
// Its callbacks commit before any commit stage or barrier could look at the
// folder, so the instance first makes sure the folder's settings marker
// holds this run's settings (judged, and written in a new folder), before
// it registers any callback: a rerun with other settings is refused before
// any commit (the partition guarantee is weaker here: docs/guarantees.md).
// It registers none for a window whose completion marker exists.
type finalizingWriteFilesFn struct {
	writeFilesFn
	// Settings is the folder's settings marker for this run.
	Settings []byte `json:"settings,omitempty"`
	// Ext is the extension of the run's files: no file is written into a
	// partition that holds an s3once file of another (a folder without a
	// marker, rerun with another Format or Compression).
	Ext string `json:"ext,omitempty"`

	marker  markerSettings
	guard   settingsGuard
	parts   partitionGuard
	markers markerGuard
}

func (f *finalizingWriteFilesFn) Setup(ctx context.Context) error {
	if err := f.writeFilesFn.Setup(ctx); err != nil {
		return err
	}
	if len(f.Settings) > 0 {
		ms, err := decodeSettings(f.Settings)
		if err != nil {
			return fmt.Errorf("s3once sink: the run's settings marker: %w", err)
		}
		f.marker = ms
	}
	return nil
}

// ProcessElement is writeFilesFn's, with the bundle's finalizer, once the
// folder's settings marker is known to hold this run's settings.
func (f *finalizingWriteFilesFn) ProcessElement(ctx context.Context, bf beam.BundleFinalization, rt *sdf.LockRTracker, b batch, emit func(pendingFile)) (sdf.ProcessContinuation, error) {
	if f.marker != nil {
		if err := f.guard.check(ctx, f.bucket, f.S.Bucket, f.S.Prefix, f.marker, "this run committed nothing; its uploads are left for the sweep"); err != nil {
			return sdf.StopProcessing(), fmt.Errorf("s3once sink: %w", err)
		}
	}
	if f.Ext != "" {
		at := FileResult{Bucket: f.S.Bucket, Destination: b.Destination, Window: b.Window}
		if err := f.parts.checkExt(ctx, f.bucket, f.S.Prefix, at, f.Ext); err != nil {
			return sdf.StopProcessing(), fmt.Errorf("s3once sink: %w", err)
		}
	}
	// A window whose completion marker exists is complete: its files are
	// not committed at finalization, but left to the commit stage, which
	// commits only those the marker names (markerGuard).
	m, err := f.markers.marker(ctx, f.bucket, f.S.Bucket, f.S.Prefix, b.Window)
	if err != nil {
		return sdf.StopProcessing(), fmt.Errorf("s3once sink: %w", err)
	}
	if m.found {
		bf = nil
	}
	return f.process(ctx, bf, rt, b, emit)
}

// process writes the records of rt's restriction; bf is nil when the DoFn
// does not finalize bundles.
func (f *writeFilesFn) process(ctx context.Context, bf beam.BundleFinalization, rt *sdf.LockRTracker, b batch, emit func(pendingFile)) (sdf.ProcessContinuation, error) {
	defer reportThrottling(ctx)
	rest, ok := rt.GetRestriction().(restriction)
	if !ok {
		return sdf.StopProcessing(), fmt.Errorf("s3once sink: unexpected restriction %T", rt.GetRestriction())
	}
	if err := rest.validate(); err != nil {
		return sdf.StopProcessing(), fmt.Errorf("s3once sink: %w", err)
	}
	count, size := b.size()
	if rest.End > count {
		return sdf.StopProcessing(), fmt.Errorf("s3once sink: restriction %v exceeds the batch's %d records", rest, count)
	}
	// The worker's memory budget (membudget.go): the batch, its file's part
	// buffers and encoder, reserved whole before anything is written. When
	// they do not fit, the batch goes back to the runner as it is (a
	// checkpoint before its next record) to be resumed later; a batch from
	// the runner's bytes goes back as those bytes, its records never
	// decoded here (batch.held).
	mem := workerMemory.Fit(ctx, f.S.writerMemory(size, count), "a batch")
	if !workerMemory.TryAcquire(mem) {
		if err := armTracker(rt, rest); err != nil {
			return sdf.StopProcessing(), err
		}
		metricMemoryDeferrals.Inc(ctx, 1)
		return sdf.ResumeProcessingIn(deferDelay()), nil
	}
	defer workerMemory.Release(mem)
	if err := b.decodeRecords(); err != nil {
		return sdf.StopProcessing(), fmt.Errorf("s3once sink: %w", err)
	}
	b.dropOwnEncoding()
	w := &fileWriter{fn: f, ctx: ctx, b: &b, bf: bf, emit: emit,
		index: rest.FileIndex, records: rest.FileRecords, bytes: rest.FileBytes}
	defer w.dispose()
	if rest.Token != nil {
		err := w.recover(rest)
		if mustRewrite(err) {
			// The upload or the tail the token names is gone or altered:
			// the commit stage committed the file after the checkpoint the
			// runner restored, or it was swept; or the file's records no
			// longer encode to its bytes. Write the file again.
			w.dispose() // keeps the upload: a token names it
			log.Warnf(ctx, "s3once sink: %v; writing the file again from its first record (a committed file with the same bytes stays as it is)", err)
			metricRewrites.Inc(ctx, 1)
			err = w.rewrite(rest)
		}
		if err != nil {
			return sdf.StopProcessing(), err
		}
	}

	began := time.Now()
	var written int64 // record bytes written by this call
	syncEvery := f.S.syncBytes()
	for i := rest.Start; rt.TryClaim(i); i++ {
		line := b.Lines[i]
		if err := w.write(line); err != nil {
			return sdf.StopProcessing(), err
		}
		written += int64(len(line))
		next := i + 1
		if next == rest.End {
			break
		}
		switch {
		case w.full(b.Lines[next]):
			if err := w.close(); err != nil {
				return sdf.StopProcessing(), err
			}
		case w.seg >= syncEvery:
			if err := w.sync(); err != nil {
				return sdf.StopProcessing(), err
			}
		default:
			continue
		}
		// A sync point: checkpoint here?
		due := written >= f.S.CheckpointBytes ||
			(f.S.CheckpointInterval > 0 && time.Since(began) >= f.S.CheckpointInterval)
		if f.checkpointAt != nil {
			due = f.checkpointAt(next)
		}
		if !due {
			continue
		}
		residual, err := w.checkpoint(next, rest.End)
		if err != nil {
			return sdf.StopProcessing(), err
		}
		if err := armTracker(rt, residual); err != nil {
			return sdf.StopProcessing(), err
		}
		return sdf.ResumeProcessingIn(f.S.ResumeDelay), nil
	}
	if err := rt.GetError(); err != nil {
		return sdf.StopProcessing(), err
	}
	if w.stream != nil {
		if err := w.close(); err != nil {
			return sdf.StopProcessing(), err
		}
	}
	return sdf.StopProcessing(), nil
}

// fileWriter is one ProcessElement call's view of the file being written.
type fileWriter struct {
	fn   *writeFilesFn
	ctx  context.Context
	b    *batch
	bf   beam.BundleFinalization
	emit func(pendingFile)

	index   int   // the file's index in the batch
	records int64 // records in the file
	bytes   int64 // record bytes in the file
	seg     int64 // record bytes since the last sync point

	stream *recoverable.Stream // nil when no file is open
	body   filebody.Body       // the open file's body, or nil
}

func (w *fileWriter) key() string { return fileKey(w.fn.S.folder, w.fn.ext, w.b, w.index) }

// fail names the file in err.
//
// An error that already names the file (a *recoverable.Error for the same
// bucket and key) only gets the sink's prefix, so the message says the key
// once.
func (w *fileWriter) fail(what string, err error) error {
	var re *recoverable.Error
	if errors.As(err, &re) && re.Bucket == w.fn.S.Bucket && re.Key == w.key() {
		return fmt.Errorf("s3once sink: %w", err)
	}
	return fmt.Errorf("s3once sink: %s s3://%s/%s: %w", what, w.fn.S.Bucket, w.key(), err)
}

// full reports whether the file must roll before next.
func (w *fileWriter) full(next []byte) bool {
	if w.stream == nil {
		return false
	}
	s := w.fn.S
	return (s.MaxFileRecords > 0 && w.records >= s.MaxFileRecords) || w.bytes+int64(len(next)) > s.MaxFileBytes
}

// write appends a record to the file, opening the file first if needed.
func (w *fileWriter) write(line []byte) error {
	if w.stream == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	if err := w.body.Write(line); err != nil {
		return err
	}
	n := int64(len(line))
	w.records++
	w.bytes += n
	w.seg += n
	return nil
}

func (w *fileWriter) open() error {
	key := w.key()
	if err := checkKey(w.fn.S.folder, key); err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	st, err := w.fn.writer.Open(w.ctx, w.fn.S.Bucket, key, w.fn.oo)
	if err != nil {
		return w.fail("open", err)
	}
	w.stream = st
	w.records, w.bytes, w.seg = 0, 0, 0
	w.body, err = w.fn.bodies.Open(st, w.fail)
	return err
}

// recover reopens the file rest's token describes, and readies its body.
func (w *fileWriter) recover(rest restriction) error {
	rr, err := coder.DecodeResumeToken(rest.Token)
	if err != nil {
		return w.fail("decode resume token", err)
	}
	if key := w.key(); rr.Bucket != w.fn.S.Bucket || rr.Key != key {
		return w.fail("recover", fmt.Errorf("the resume token is for s3://%s/%s", rr.Bucket, rr.Key))
	}
	st, err := w.fn.writer.Recover(w.ctx, rr)
	if err != nil {
		return w.fail("recover", err)
	}
	w.stream = st
	if takeBack(rr) {
		metricSelfResumes.Inc(w.ctx, 1)
	} else {
		metricRecoveries.Inc(w.ctx, 1)
		if rr.Tail.Len > 0 {
			metricTailsRecovered.Inc(w.ctx, 1)
		}
	}
	at := filebody.Point{Upload: rr.UploadID, Size: rr.Size(), CRC: rr.CRC(),
		Lines: w.b.Lines, Start: rest.Start, FileRecords: rest.FileRecords, FileBytes: rest.FileBytes}
	w.body, err = w.fn.bodies.Resume(w.ctx, st, at, w.fail)
	return err
}

// mustRewrite tells whether a failed recovery calls for writing the file
// again: the token's upload is gone, or its parts or tail are missing or
// altered (recoverable.IsArtifactLost), or the file's body cannot go on
// from the token (filebody.Stale). Transient failures (network, throttling,
// timeouts) do not: the runner retries the bundle.
func mustRewrite(err error) bool {
	var stale filebody.Stale
	return recoverable.IsArtifactLost(err) || errors.As(err, &stale)
}

// rewrite writes the records the file of rest held at its checkpoint again,
// from its first (rest.Start - rest.FileRecords), as a new upload, with the
// same sync points: the file's bytes up to the checkpoint are the same as
// before, and writing goes on from rest.Start as after a recovery.
func (w *fileWriter) rewrite(rest restriction) error {
	first := rest.Start - rest.FileRecords
	if first < 0 {
		return w.fail("rewrite", fmt.Errorf("the restriction %v starts its file before the batch", rest))
	}
	syncEvery := w.fn.S.syncBytes()
	for i := first; i < rest.Start; i++ {
		if w.full(w.b.Lines[i]) {
			return w.fail("rewrite", fmt.Errorf("the restriction %v does not match the batch: the file rolls at record %d", rest, i))
		}
		if err := w.write(w.b.Lines[i]); err != nil {
			return err
		}
		if w.seg >= syncEvery {
			if err := w.sync(); err != nil {
				return err
			}
		}
	}
	if synced := w.body == nil || w.body.Synced(); w.records != rest.FileRecords || w.bytes != rest.FileBytes || !synced {
		return w.fail("rewrite", fmt.Errorf("the restriction %v does not match the batch: %d records and %d bytes rewritten, sync point %v", rest, w.records, w.bytes, synced))
	}
	metricRewrittenRecords.Inc(w.ctx, w.records)
	return nil
}

// sync ends the file's stretch at a sync point.
func (w *fileWriter) sync() error {
	w.seg = 0
	if w.body == nil {
		return nil
	}
	return w.body.Sync()
}

// checkpoint makes the open file durable and returns the residual that
// resumes at record next.
func (w *fileWriter) checkpoint(next, end int64) (restriction, error) {
	r := restriction{Start: next, End: end, FileIndex: w.index}
	if w.stream == nil {
		return r, nil
	}
	rr, err := w.stream.Persist(w.ctx)
	if err != nil {
		return r, w.fail("persist", err)
	}
	metricPersists.Inc(w.ctx, 1)
	if r.Token, err = coder.EncodeResumeToken(rr); err != nil {
		return r, w.fail("encode resume token", err)
	}
	handOver(rr)
	r.FileRecords, r.FileBytes = w.records, w.bytes
	if w.body != nil {
		w.body.Leave(rr.UploadID)
		w.body = nil
	}
	return r, nil
}

// close ends the file: its last part is uploaded, its commit token emitted
// for the commit stage, and a finalization callback commits it as soon as the
// runner has made the bundle's output durable.
func (w *fileWriter) close() error {
	w.seg = 0
	body := w.body
	err := body.Finish()
	w.body = nil
	if err != nil {
		return err
	}
	key := w.key()
	cr, err := w.stream.CloseForCommit(w.ctx)
	if err != nil {
		return w.fail("close", err)
	}
	_ = w.stream.Dispose(w.ctx) // frees buffers; a closed stream aborts nothing
	w.stream = nil
	enc, err := coder.EncodeCommitToken(cr)
	if err != nil {
		return w.fail("encode commit token", err)
	}
	res := FileResult{
		Bucket: cr.Bucket, Key: key, Bytes: cr.Size(), Records: w.records,
		Window: w.b.Window, Destination: w.b.Destination, Shard: w.b.Shard,
		FileIndex: w.index, Pane: w.b.Pane, SubBatch: w.b.SubBatch, SubBatches: w.b.SubBatches,
		CRC64NVME: cr.CRC(), Footer: parquetFooter(body.Summary()),
	}
	w.emit(pendingFile{Commit: enc, Result: res})
	w.fn.registerCommit(w.bf, cr)

	metricFilesClosed.Inc(w.ctx, 1)
	metricRecords.Inc(w.ctx, w.records)
	metricBytes.Inc(w.ctx, cr.Size())
	metricParts.Inc(w.ctx, int64(cr.Parts.Count))

	w.index++
	w.records, w.bytes, w.seg = 0, 0, 0
	return nil
}

// Counters of files written again after a failed recovery (see
// fileWriter.rewrite), and of the records written again for them.
var (
	metricRewrites         = beam.NewCounter("s3once", "files_rewritten")
	metricRewrittenRecords = beam.NewCounter("s3once", "records_rewritten")
)

// Counts of finalization callbacks, in this process: registered, and run.
// Tests compare them (prism runs the workers in the test's process).
var finalizeRegistered, finalizeRan atomic.Int64

// registerCommit asks the runner to commit cr once the bundle is durable. The
// callback never reports a failure, only logs it: the commit stage commits
// the file anyway, and runners differ in what they do with a failed callback
// (the Go SDK keeps it for another finalization request; some runners fail
// the job).
//
// An instance registers callbacks only until one of its callbacks has run.
// The Go SDK (v2.77) builds one DoFn instance per execution plan and, when it
// finalizes a plan's bundle, replaces the plan's finalizer while the DoFn
// keeps a pointer to the old one: every callback registered after that is
// never run, yet stays reachable as long as the plan does. Once a callback of
// the instance has run, its plan has been finalized, so further callbacks
// would only pile up; the commit stage commits those files.
func (f *writeFilesFn) registerCommit(bf beam.BundleFinalization, cr recoverable.CommitToken) {
	if bf == nil || f.finalized.Load() {
		return
	}
	c := f.committer
	finalizeRegistered.Add(1)
	bf.RegisterCallback(finalizeExpiry, func() error {
		f.finalized.Store(true)
		finalizeRan.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), finalizeTimeout)
		defer cancel()
		if _, err := c.Commit(ctx, cr); err != nil {
			log.Warnf(ctx, "s3once sink: commit at bundle finalization failed; the commit stage will commit s3://%s/%s: %v", cr.Bucket, cr.Key, err)
		}
		return nil
	})
}

// dispose releases a file left open (after a checkpoint or a failure). A
// persisted upload is kept for the residual; one never persisted is aborted.
func (w *fileWriter) dispose() {
	if w.body != nil {
		w.body.Leave("")
		w.body = nil
	}
	if w.stream == nil {
		return
	}
	if err := w.stream.Dispose(context.WithoutCancel(w.ctx)); err != nil {
		log.Warnf(w.ctx, "s3once sink: %v", err)
	}
	w.stream = nil
}
