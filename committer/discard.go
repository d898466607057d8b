package committer

// The discarding of a refused run's uploads, for the sink's run-wide
// barrier. Every call runs under the committer's Policy (bounded per
// attempt, retried when transient), and the whole under one clean-up
// bound, CleanupTimeout. The general bucket operations the barrier, the
// markers and manifests and s3once verify also need (what a key holds,
// objects written once, listings) are internal/bucket's.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// discardLimit bounds the uploads Discard works on at once.
const discardLimit = 16

// Discard removes what the uploads of a refused run hold: it aborts each
// token's upload (never completed: a run is refused before its first
// commit) and deletes its side objects in batches, old versions included
// where the bucket keeps them. It runs detached from ctx's cancellation,
// under one clean-up bound (CleanupTimeout) in all; what it cannot remove
// is left for the sweep, and reported. Each token is checked first
// (bucket, key and staging prefix are the caller's to check; the side
// objects deleted are only those ownkeys names for the upload under the
// committer's staging prefix).
func (c *Committer) Discard(ctx context.Context, crs []recoverable.CommitToken) error {
	ctx, cancel := c.cleanupContext(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(discardLimit)
	var mu sync.Mutex
	var errs []error
	for _, cr := range crs {
		if cr.Bucket == "" || cr.Key == "" || cr.UploadID == "" {
			// Nothing to address the upload by: no call is made for it.
			mu.Lock()
			errs = append(errs, fmt.Errorf("discard upload %q of s3://%s/%s: %w: bucket, key and upload ID are required", cr.UploadID, cr.Bucket, cr.Key, recoverable.ErrInvalidToken))
			mu.Unlock()
			continue
		}
		g.Go(func() error {
			if err := c.discardUpload(gctx, cr); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("abort upload %s of s3://%s/%s: %w", cr.UploadID, cr.Bucket, cr.Key, err))
				mu.Unlock()
				return nil
			}
			if _, err := c.deleteSideObjects(gctx, cr); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("side objects of upload %s of s3://%s/%s: %w", cr.UploadID, cr.Bucket, cr.Key, err))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more", len(errs)-3))
	}
	return errors.Join(errs...)
}

// discardUpload aborts the token's upload under ctx, Discard's one bound
// (abortUpload would detach it and bound it afresh). An upload already gone
// is no error.
func (c *Committer) discardUpload(ctx context.Context, cr recoverable.CommitToken) error {
	_, err := call(ctx, c, "abort upload", func(ctx context.Context) (*s3.AbortMultipartUploadOutput, error) {
		return c.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), UploadId: aws.String(cr.UploadID),
		})
	})
	if err != nil && !s3call.IsNoSuchUpload(err) {
		return err
	}
	return nil
}
