package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

func init() {
	register.DoFn4x1[context.Context, int, func(*pendingFile) bool, func(pendingFile), error](&barrierFn{})
	register.Iter1[pendingFile]()
}

// barrierLooks bounds the barrier's S3 calls in flight.
const barrierLooks = 16

// discardTimeout bounds the clean-up after a refused run.
const discardTimeout = 2 * time.Minute

// metricBarrierFiles counts the files the run-wide barrier checked; of
// those, metricBarrierKept the ones whose key already held the same bytes
// (kept from an earlier run).
var (
	metricBarrierFiles = beam.NewCounter("s3once", "barrier_files")
	metricBarrierKept  = beam.NewCounter("s3once", "barrier_kept")
)

// hintChangedRerun is the barrier's advice when a run would put other bytes
// under names an earlier run committed.
const hintChangedRerun = "nothing of this run was committed and its uploads were aborted, so the folder is as the earlier run left it. " +
	"The folder holds files of another input or of other byte-affecting settings (Format, Compression or its library's version, " +
	"Shards, MaxBatchBytes, MaxFileBytes, MaxFileRecords, CheckpointBytes): when the input or the settings change, write to a fresh Prefix; " +
	"to replace the folder's files instead, delete them first"

// barrierApplies tells whether Write puts the run-wide barrier before its
// commit stage: the input is bounded, in any window, and no file is
// committed at bundle finalization (which would commit before the barrier).
// why says, for the build-time log, which guarantee applies and why.
func barrierApplies(st settings, col beam.PCollection) (applies bool, why string) {
	if st.FinalizeCommit == FinalizeAlways {
		return false, "files are committed at bundle finalization (FinalizeCommit resolved to \"always\"), before any run-wide barrier could run"
	}
	bounded, known := isBounded(col)
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
// marker is the folder's settings marker (encodeFingerprint), which the
// barrier compares and writes; empty leaves the marker alone.
func withBarrier(s beam.Scope, st settings, pending beam.PCollection, marker []byte) (beam.PCollection, error) {
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
	return single(beam.TryParDo(s, &barrierFn{S: st, Settings: marker}, all))
}

func init() { register.Function1x2(addBarrierKey) }

// addBarrierKey puts every pending file under one key.
func addBarrierKey(p pendingFile) (int, pendingFile) { return 0, p }

// barrierFn is the run-wide barrier: it receives every file of the run,
// closed and not yet committed, and looks at each file's key. When every
// key is free or already holds exactly the file's bytes (size and
// CRC64NVME), it emits the files to the commit stage. Otherwise it commits
// nothing: it aborts every upload of the run (they are this run's own, never
// completed), deletes their side objects, and fails with
// committer.ErrKeyTaken. A retry of the bundle finds the same keys taken and
// fails the same way.
type barrierFn struct {
	S settings `json:"s"`
	// Settings is the folder's settings marker for this run (fingerprint.go).
	Settings []byte `json:"settings,omitempty"`

	client committer.S3
	fp     fingerprint
}

func (f *barrierFn) Setup(ctx context.Context) error {
	w, err := f.S.worker(ctx)
	if err != nil {
		return err
	}
	f.client = w.client
	return f.decodeSettings() // fingerprint.go
}

// barrierFile is one file at the barrier: its token and what its key holds.
type barrierFile struct {
	p      pendingFile
	cr     recoverable.CommitRecoverable
	holds  string // what the key holds when it is not free and not the file
	same   bool   // the key already holds the file's bytes
	looked error
}

func (f *barrierFn) ProcessElement(ctx context.Context, _ int, files func(*pendingFile) bool, emit func(pendingFile)) error {
	var all []*barrierFile
	var p pendingFile
	for files(&p) {
		cr, err := coder.DecodeCommit(p.Commit)
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

	// The settings marker (fingerprint.go): other settings recorded in the
	// folder refuse the run before its keys are looked at.
	hasMarker := false
	if f.fp != nil {
		var err error
		if hasMarker, err = compareSettings(ctx, f.client, f.S.Bucket, f.S.Prefix, f.fp, settingsRefusedDone); err != nil {
			return f.refuseSettings(ctx, all, err)
		}
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(barrierLooks)
	for _, bf := range all {
		g.Go(func() error {
			bf.holds, bf.same, bf.looked = f.look(gctx, bf.cr)
			return nil
		})
	}
	_ = g.Wait()
	var taken []*barrierFile
	kept := 0
	for _, bf := range all {
		if bf.looked != nil {
			return fmt.Errorf("s3once sink: barrier: look at s3://%s/%s: %w", bf.cr.Bucket, bf.cr.Key, bf.looked)
		}
		switch {
		case bf.same:
			kept++
		case bf.holds != "":
			taken = append(taken, bf)
		}
	}
	if len(taken) == 0 {
		// A folder without a marker (new, or written by a release that
		// wrote none) gets this run's, now that every key is free or
		// holds this run's bytes; before any file is committed.
		if f.fp != nil && !hasMarker {
			if err := writeSettings(ctx, f.client, f.S.Bucket, f.S.Prefix, f.fp, settingsRefusedDone); err != nil {
				return f.refuseSettings(ctx, all, err)
			}
		}
		metricBarrierKept.Inc(ctx, int64(kept))
		for _, bf := range all {
			emit(bf.p)
		}
		return nil
	}
	cleanup := f.discard(ctx, all)
	first := taken[0]
	err := fmt.Errorf("%w: the key holds %s, this run's file there is %d bytes with CRC64NVME %016x; %d of this run's %d files would replace other bytes",
		committer.ErrKeyTaken, first.holds, first.cr.Size(), first.cr.CRC(), len(taken), len(all))
	if cleanup != nil {
		err = fmt.Errorf("%w (and removing this run's uploads failed, the sweep will remove them: %w)", err, cleanup)
	}
	return fmt.Errorf("s3once sink: %w", &recoverable.Error{
		Op: "commit", Bucket: first.cr.Bucket, Key: first.cr.Key, UploadID: first.cr.UploadID,
		Err: err, Hint: hintChangedRerun,
	})
}

// look tells what the file's key holds: nothing (holds ""), the file's own
// bytes (same), or something else, described. An object without a
// full-object CRC64NVME is read back to compute it, when its size matches.
func (f *barrierFn) look(ctx context.Context, cr recoverable.CommitRecoverable) (holds string, same bool, err error) {
	out, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		if s3call.IsNotFound(err) {
			return "", false, nil
		}
		return "", false, err
	}
	size, etag := aws.ToInt64(out.ContentLength), aws.ToString(out.ETag)
	if size != cr.Size() {
		return fmt.Sprintf("an object of %d bytes (ETag %s)", size, etag), false, nil
	}
	crc, ok := recoverable.DecodeCRC(aws.ToString(out.ChecksumCRC64NVME))
	if !ok || out.ChecksumType == types.ChecksumTypeComposite {
		if crc, err = f.readBack(ctx, cr, etag); err != nil {
			return "", false, err
		}
	}
	if crc != cr.CRC() {
		return fmt.Sprintf("an object of %d bytes with CRC64NVME %016x (ETag %s)", size, crc, etag), false, nil
	}
	return "", true, nil
}

// readBack computes the CRC64NVME of the object with the given ETag.
func (f *barrierFn) readBack(ctx context.Context, cr recoverable.CommitRecoverable, etag string) (uint64, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key)}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	out, err := f.client.GetObject(ctx, in)
	if err != nil {
		return 0, fmt.Errorf("read back: %w", err)
	}
	defer out.Body.Close()
	buf := make([]byte, 1<<20)
	var crc uint64
	for {
		n, err := out.Body.Read(buf)
		crc = recoverable.UpdateCRC64(crc, buf[:n])
		if errors.Is(err, io.EOF) {
			return crc, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read back: %w", err)
		}
	}
}

// discard aborts every file's upload and deletes its side objects, on a
// context of its own: the run failed, and what it leaves must go.
func (f *barrierFn) discard(ctx context.Context, all []*barrierFile) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(barrierLooks)
	var mu sync.Mutex
	var errs []error
	for _, bf := range all {
		g.Go(func() error {
			if err := f.discardOne(gctx, bf.cr); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

func (f *barrierFn) discardOne(ctx context.Context, cr recoverable.CommitRecoverable) error {
	_, err := f.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), UploadId: aws.String(cr.UploadID)})
	if err != nil && !recoverable.IsNoSuchUpload(err) {
		return fmt.Errorf("abort upload %s of s3://%s/%s: %w", cr.UploadID, cr.Bucket, cr.Key, err)
	}
	folder := ownkeys.SideObjectPrefix(f.S.StagingPrefix, cr.UploadID)
	p := s3.NewListObjectsV2Paginator(f.client, &s3.ListObjectsV2Input{Bucket: aws.String(cr.Bucket), Prefix: aws.String(folder)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list side objects under s3://%s/%s: %w", cr.Bucket, folder, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if !ownkeys.IsSideObjectOf(f.S.StagingPrefix, cr.UploadID, key) {
				continue
			}
			if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(cr.Bucket), Key: aws.String(key)}); err != nil && !s3call.IsNotFound(err) {
				return fmt.Errorf("delete side object s3://%s/%s: %w", cr.Bucket, key, err)
			}
		}
	}
	return nil
}
