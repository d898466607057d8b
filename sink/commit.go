package sink

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// FileResult describes one committed file. Write's output holds one per file
// (more than one when Beam retries a bundle downstream of the commit: key on
// Bucket and Key).
type FileResult struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	// Bytes is the object's size; Records the number of records in it.
	Bytes   int64 `json:"bytes"`
	Records int64 `json:"records"`
	// Window is the window's name as it appears in Key ("global", or its
	// bounds); Pane the pane's index.
	Window string `json:"window"`
	Pane   int64  `json:"pane"`
	// Destination is the destination's path ("" for none).
	Destination string `json:"destination"`
	// Shard is the file's shard; FileIndex its place among the shard's files.
	Shard     int `json:"shard"`
	FileIndex int `json:"fileIndex"`
	// SubBatch and SubBatches say which part of its shard the file came from:
	// a shard larger than MaxBatchBytes is written as SubBatches sub-batches
	// (1 when it was not split), and FileIndex counts within the sub-batch.
	SubBatch   int `json:"subBatch"`
	SubBatches int `json:"subBatches"`
	// CRC64NVME is the object's full-object CRC64NVME, which the commit
	// verified. Output version 1's completion markers leave it out.
	CRC64NVME uint64 `json:"crc64nvme,omitempty"`
	// Footer is, for a Parquet file, what its footer records (row groups,
	// and each column's sizes, counts and bounds); empty for the line
	// formats. It is not in the manifests or the completion marker.
	Footer ParquetFooter `json:"-"`
}

// Beam metrics, in the "s3once" namespace.
var (
	metricReceived       = beam.NewCounter("s3once", "records_received")
	metricRecords        = beam.NewCounter("s3once", "records_written")
	metricBytes          = beam.NewCounter("s3once", "bytes_written")
	metricParts          = beam.NewCounter("s3once", "parts_uploaded")
	metricFilesClosed    = beam.NewCounter("s3once", "files_closed")
	metricPersists       = beam.NewCounter("s3once", "persists")
	metricTailsRecovered = beam.NewCounter("s3once", "tails_recovered")
	metricCommitted      = beam.NewCounter("s3once", "files_committed")
	metricAlreadyDone    = beam.NewCounter("s3once", "commits_already_done")
	metricCommitRetries  = beam.NewCounter("s3once", "commit_retries")
	// metricRewriteRequired counts files whose upload the server discarded
	// after a conflicting write (committer.ErrRewriteRequired): the run fails,
	// and a rerun writes them again.
	metricRewriteRequired = beam.NewCounter("s3once", "rewrites_required")
)

// commitRounds is how often the commit stage calls the committer for one file
// when it fails in a way worth retrying (the committer retries each S3 call
// itself); after that the bundle fails and the runner retries it.
const commitRounds = 3

// commitFn commits each file (again, when the bundle-finalization callback got
// there first) and reports it. The commit is idempotent and verified: it
// succeeds only if the key then holds exactly the bytes the token describes.
type commitFn struct {
	S folder `json:"s"`
	// Settings is the folder's settings marker for this run, judged, and
	// written in a new folder, before the instance's first commit
	// (settings_marker.go); empty where the run-wide barrier does that.
	Settings []byte `json:"settings,omitempty"`
	// Manifests, where there is no barrier (output version 2), refuses a
	// file whose partition's manifest exists and does not list it
	// (partitionGuard).
	Manifests bool `json:"manifests,omitempty"`
	// Ext, where there is no barrier, is the extension of the run's files:
	// a file is refused where its partition holds an s3once file of
	// another (partitionGuard.checkExt).
	Ext string `json:"ext,omitempty"`
	// Markers, where there is no barrier, refuses a file whose window's
	// completion marker exists and does not name it (markerGuard).
	Markers bool `json:"markers,omitempty"`

	committer *committer.Committer
	bucket    *s3bucket.Client
	pause     time.Duration
	marker    markerSettings
	guard     settingsGuard
	parts     partitionGuard
	markers   markerGuard
}

func (f *commitFn) Setup(ctx context.Context) error {
	return f.S.setUp(ctx, func(c *committer.Committer, b *s3bucket.Client, client s3API) error {
		f.committer, f.bucket = c, b
		return f.init(client)
	})
}

// commitGuardDone is what a commit stage refused for the folder's settings
// did.
const commitGuardDone = "this run committed nothing; its uploads are left for the sweep"

// fileRefusedDone is what the commit stage did with a file it refused.
const fileRefusedDone = "this file was not committed; its upload is left for the sweep"

// init readies the DoFn over client, with its own committer and bucket
// client unless it has them; tests call it directly.
func (f *commitFn) init(client committer.S3) error {
	if f.committer == nil {
		c, err := committer.New(client, committer.Options{StagingPrefix: f.S.StagingPrefix})
		if err != nil {
			return fmt.Errorf("s3once sink: %w", err)
		}
		f.committer = c
	}
	if f.bucket == nil {
		f.bucket = s3bucket.New(client, s3bucket.Options{})
	}
	f.pause = time.Second
	if len(f.Settings) > 0 {
		ms, err := decodeSettings(f.Settings)
		if err != nil {
			return fmt.Errorf("s3once sink: the run's settings marker: %w", err)
		}
		f.marker = ms
	}
	return nil
}

// checkOwnToken refuses a commit token that is not this sink's to commit:
// another bucket, or a key that is not an s3once file name under the sink's
// Prefix. A token reaches the commit stage from the runner (a checkpoint, a
// shuffle), so it is checked before any S3 call: a corrupted or hostile one
// could otherwise complete, or abort, any upload the credentials reach.
func checkOwnToken(s folder, cr recoverable.CommitToken) error {
	var why string
	switch {
	case cr.Bucket != s.Bucket:
		why = fmt.Sprintf("the token names bucket %q, the sink writes to %q", cr.Bucket, s.Bucket)
	case !ownkeys.IsFileName(s.Prefix, cr.Key):
		why = fmt.Sprintf("the token's key is not an s3once file name under %q", ownkeys.Folder(s.Prefix))
	default:
		return nil
	}
	return &recoverable.Error{
		Op: "commit", Bucket: cr.Bucket, Key: cr.Key, UploadID: cr.UploadID,
		Err:  fmt.Errorf("%w: %s", recoverable.ErrInvalidToken, why),
		Hint: "nothing was touched; the token comes from another job or a damaged checkpoint: restore the job from a checkpoint of this pipeline",
	}
}

// commitAgain tells whether the commit stage calls the committer once more
// for a file after err: failures worth retrying, and ErrConflict, after which
// the token's upload is intact and the same token commits later. Everything
// else fails the bundle. ErrRewriteRequired among them: the server discarded
// the upload, this stage holds only the token, and a rerun writes the same
// bytes again (on a runner that restores an earlier checkpoint, the writer
// rewrites the file itself when it finds the upload gone).
func commitAgain(err error) bool {
	return s3call.IsRetryable(err) || errors.Is(err, committer.ErrConflict)
}

func (f *commitFn) ProcessElement(ctx context.Context, p pendingFile, emit func(FileResult)) error {
	defer reportThrottling(ctx)
	cr, err := coder.DecodeCommitToken(p.Commit)
	if err != nil {
		return fmt.Errorf("s3once sink: commit s3://%s/%s: %w", p.Result.Bucket, p.Result.Key, err)
	}
	if err := checkOwnToken(f.S, cr); err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	if f.marker != nil { // the settings marker, before the first commit
		if err := f.guard.check(ctx, f.bucket, f.S.Bucket, f.S.Prefix, f.marker, commitGuardDone); err != nil {
			return fmt.Errorf("s3once sink: commit s3://%s/%s: %w", cr.Bucket, cr.Key, err)
		}
	}
	if f.Manifests {
		if err := f.parts.check(ctx, f.bucket, f.S.Prefix, p.Result, cr.Size(), cr.CRC()); err != nil {
			return fmt.Errorf("s3once sink: commit s3://%s/%s: %w", cr.Bucket, cr.Key, err)
		}
	}
	if f.Ext != "" {
		if err := f.parts.checkExt(ctx, f.bucket, f.S.Prefix, p.Result, f.Ext); err != nil {
			return fmt.Errorf("s3once sink: commit s3://%s/%s: %w", cr.Bucket, cr.Key, err)
		}
	}
	if f.Markers {
		if err := f.markers.check(ctx, f.bucket, f.S.Prefix, p.Result, cr.Size(), cr.CRC(), fileRefusedDone); err != nil {
			return fmt.Errorf("s3once sink: commit s3://%s/%s: %w", cr.Bucket, cr.Key, err)
		}
	}
	for round := 1; ; round++ {
		res, err := f.committer.CommitAfterRecovery(ctx, cr)
		if err == nil {
			metricCommitted.Inc(ctx, 1)
			if res.AlreadyCommitted {
				metricAlreadyDone.Inc(ctx, 1)
			}
			emit(p.Result)
			return nil
		}
		if round >= commitRounds || !commitAgain(err) || ctx.Err() != nil {
			if errors.Is(err, committer.ErrRewriteRequired) {
				metricRewriteRequired.Inc(ctx, 1)
			}
			return commitFailure(err, p.Commit)
		}
		metricCommitRetries.Inc(ctx, 1)
		select {
		case <-ctx.Done():
			return fmt.Errorf("s3once sink: %w (while waiting to retry after: %w)", context.Cause(ctx), err)
		case <-time.After(f.pause):
		}
	}
}

// commitFailure is the commit stage's error for a file it gave up on. The
// committer names its operation "commit after recovery" (the stage looks at
// the key first), which to an operator reads as if something had crashed:
// the stage's errors say "commit". The file's commit token rides along in
// base64, ready for s3once inspect, since tokens otherwise live only in the
// runner's state.
func commitFailure(err error, token []byte) error {
	if re, ok := err.(*recoverable.Error); ok && re.Op == "commit after recovery" {
		e := *re
		e.Op = "commit"
		err = &e
	}
	return fmt.Errorf("s3once sink: %w (the file's commit token, for s3once inspect --base64: %s)", err, base64.StdEncoding.EncodeToString(token))
}
