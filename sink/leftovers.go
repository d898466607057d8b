package sink

// Left-over uploads: a crashed attempt, a zombie bundle or a killed run
// leaves multipart uploads open at the keys of files that a later attempt
// then commits. The sink completes with If-None-Match, so an upload of a key
// that holds the committed file can never become its object: it is garbage
// at any age, and `s3once verify` names it. Once a window's manifests are
// written, every file of the window is committed, so the manifest stage
// lists the open uploads of each partition (one listing a partition, never
// one a file), aborts those at the window's file keys and deletes their side
// objects. The upload that made a file is completed, so no listing shows it;
// an upload of another attempt of this run still writing such a key (a
// zombie) is aborted too, rightly: it cannot complete. A runner that later
// restores a checkpoint naming an aborted upload writes the file again
// (files_rewritten), and the commit finds it committed.
//
// The clean-up never fails the run: what it cannot list or remove is logged
// and left to `s3once sweep`, which removes the same left-overs whatever
// their age. The sink always commits with If-None-Match; a Committer with
// AllowUnconditional is never the sink's, so there is no folder of the
// sink's where such an upload could still replace an object.

import (
	"context"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/recoverable"
)

// metricLeftoversAborted counts the uploads at keys of committed files that
// the manifest stage aborted (with their side objects).
var metricLeftoversAborted = beam.NewCounter("s3once", "leftover_uploads_aborted")

// leftoverLimit bounds the partitions listed, and the uploads aborted, at
// once by one window's clean-up.
const leftoverLimit = 8

// abortLeftovers aborts the open uploads at the keys of the window's
// committed files (files, by key), partition by partition, and deletes
// their side objects. It reports nothing: failures are logged, and the
// sweep is the backstop.
func (w *windowWriter) abortLeftovers(ctx context.Context, window string, files map[string]FileResult) {
	dests := map[string]bool{}
	for _, r := range files {
		dests[r.Destination] = true
	}
	var aborted atomic.Int64
	var g errgroup.Group
	g.SetLimit(leftoverLimit)
	for dest := range dests {
		g.Go(func() error {
			w.abortPartitionLeftovers(ctx, dest, window, files, &aborted)
			return nil
		})
	}
	_ = g.Wait()
	// Beam's counters are not safe for concurrent use: one Inc, here.
	metricLeftoversAborted.Inc(ctx, aborted.Load())
}

// abortPartitionLeftovers is abortLeftovers for one partition: one listing
// of the uploads under the partition's file prefix. It adds the uploads it
// removed to aborted.
func (w *windowWriter) abortPartitionLeftovers(ctx context.Context, dest, window string, files map[string]FileResult, aborted *atomic.Int64) {
	prefix := ownkeys.PartitionFilePrefix(w.S.Prefix, dest, window)
	var left []recoverable.CommitToken
	err := w.b.ListUploads(ctx, w.S.Bucket, prefix, func(page []s3bucket.Upload) error {
		for _, u := range page {
			if r, ok := files[u.Key]; ok && r.Destination == dest {
				left = append(left, recoverable.CommitToken{Bucket: w.S.Bucket, Key: u.Key, UploadID: u.UploadID, StagingPrefix: w.c.Options().StagingPrefix})
			}
		}
		return nil
	})
	if err != nil {
		log.Warnf(ctx, "s3once sink: left-over uploads of partition s3://%s/%s were not looked for (s3once sweep removes them): %v", w.S.Bucket, prefix, err)
		return
	}
	var g errgroup.Group
	g.SetLimit(leftoverLimit)
	for _, cr := range left {
		g.Go(func() error {
			// Discard aborts the upload (one already gone is no error) and
			// deletes its side objects.
			if err := w.c.Discard(ctx, []recoverable.CommitToken{cr}); err != nil {
				log.Warnf(ctx, "s3once sink: the left-over upload %s of the committed file s3://%s/%s (it can never complete) was not removed (s3once sweep removes it): %v", cr.UploadID, cr.Bucket, cr.Key, err)
				return nil
			}
			aborted.Add(1)
			return nil
		})
	}
	_ = g.Wait()
}
