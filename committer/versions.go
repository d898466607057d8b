package committer

// Versioned buckets: deleting an object there only hides it behind a delete
// marker, and its bytes stay as a noncurrent version that is billed until a
// lifecycle rule or someone removes it. With Options.Versioned, the clean-up
// after a commit and the sweep also remove, for s3once's own staging keys
// only, the noncurrent versions and the delete markers.

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
)

// VersionLister is what removing old versions needs beyond S3. *s3.Client
// satisfies it.
type VersionLister interface {
	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, opts ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
}

// ErrNoVersionListing is returned when Options.Versioned is set and the
// client cannot list object versions.
var ErrNoVersionListing = errors.New("s3once committer: Options.Versioned needs a client that lists object versions (ListObjectVersions)")

// versionCounts counts what purgeVersions found and removed.
type versionCounts struct {
	stale, removed, failed int
	bytes                  int64
}

// purgeVersions removes, under prefix, the noncurrent versions and the
// delete markers of keys own accepts; current versions are never touched
// (the caller deletes those it means to, which makes them noncurrent). Keys
// own refuses are never touched either, whatever their versions. A dry run
// counts and removes nothing. found, if set, is told of each version to
// remove. Without Options.Versioned it does nothing.
//
// The listing returns a key's versions newest first, possibly over several
// pages; each page's versions are removed before the next is read. A delete
// marker removed before the versions under it lets the newest of them show
// again for a moment, until its own turn comes; if the purge stops between
// the two (a crash, an error), that side object shows again and the next
// sweep removes it. Nothing outside s3once's keys can be affected.
func (c *Committer) purgeVersions(ctx context.Context, bucket, prefix string, own func(key string) bool, dryRun bool, found func(SweepItem)) (versionCounts, error) {
	var n versionCounts
	if !c.opts.Versioned {
		return n, nil
	}
	vl, ok := c.client.(VersionLister)
	if !ok {
		return n, ErrNoVersionListing
	}
	// Each page is read under the Policy (a failed NextPage leaves the
	// paginator where it was, so an attempt again asks for the same page),
	// and its versions are deleted before the next page is read.
	pages := s3.NewListObjectVersionsPaginator(vl, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		out, err := call(ctx, c, "list object versions", func(ctx context.Context) (*s3.ListObjectVersionsOutput, error) {
			return pages.NextPage(ctx)
		})
		if err != nil {
			return n, fmt.Errorf("list object versions under %s: %w", prefix, err)
		}
		var ids []types.ObjectIdentifier
		for _, v := range out.Versions {
			if aws.ToBool(v.IsLatest) || v.VersionId == nil || !own(aws.ToString(v.Key)) {
				continue
			}
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
			n.bytes += aws.ToInt64(v.Size)
			if found != nil {
				found(SweepItem{Kind: "old version", Key: aws.ToString(v.Key), VersionID: aws.ToString(v.VersionId), Bytes: aws.ToInt64(v.Size)})
			}
		}
		for _, m := range out.DeleteMarkers {
			if m.VersionId == nil || !own(aws.ToString(m.Key)) {
				continue
			}
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
			if found != nil {
				found(SweepItem{Kind: "old version", Key: aws.ToString(m.Key), VersionID: aws.ToString(m.VersionId)})
			}
		}
		n.stale += len(ids)
		if !dryRun && len(ids) > 0 {
			removed, err := c.deleteVersions(ctx, bucket, ids)
			n.removed += removed
			if err != nil {
				n.failed += len(ids) - removed
				return n, fmt.Errorf("delete old versions under %s: %w", prefix, err)
			}
		}
		// Without a marker the paginator would start the listing over.
		if aws.ToBool(out.IsTruncated) && out.NextKeyMarker == nil && out.NextVersionIdMarker == nil {
			return n, errors.New("the server says the version listing goes on but gives no marker to go on from")
		}
	}
	return n, nil
}

// deleteBatch is the most keys one DeleteObjects call takes.
const deleteBatch = s3bucket.DeleteBatch

// deleteVersions deletes the given versions for good, in batches. Versions
// already gone count as deleted.
func (c *Committer) deleteVersions(ctx context.Context, bucket string, ids []types.ObjectIdentifier) (int, error) {
	deleted := 0
	var errs []error
	for len(ids) > 0 {
		batch := ids[:min(len(ids), deleteBatch)]
		ids = ids[len(batch):]
		out, err := call(ctx, c, "delete object versions", func(ctx context.Context) (*s3.DeleteObjectsOutput, error) {
			return c.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
				Bucket: aws.String(bucket), Delete: &types.Delete{Objects: batch, Quiet: aws.Bool(true)},
			})
		})
		if err != nil {
			return deleted, errors.Join(append(errs, err)...)
		}
		failed := 0
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchVersion" || aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			failed++
			if len(errs) < 3 {
				errs = append(errs, fmt.Errorf("delete %s version %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.VersionId), aws.ToString(e.Code), aws.ToString(e.Message)))
			}
		}
		deleted += len(batch) - failed
	}
	return deleted, errors.Join(errs...)
}

// sweepVersions removes the noncurrent versions and delete markers of
// s3once's own keys under the staging prefix, whatever their age: such a key
// was deleted by a clean-up or a sweep, which delete only what no retained
// token references (side objects are written once under a key never used
// again), so its old versions serve nothing. Output files are never deleted,
// so the output prefix holds no old versions of s3once's to remove.
func (c *Committer) sweepVersions(ctx context.Context, so SweepOptions, rep *SweepReport, failures *failureList) {
	n, err := c.purgeVersions(ctx, so.Bucket, ownkeys.Folder(so.StagingPrefix),
		func(k string) bool { return ownkeys.IsOwnStaging(so.StagingPrefix, k) }, so.DryRun, so.Stale)
	rep.Versions.Scanned += n.stale
	rep.Versions.Stale += n.stale
	rep.Versions.Removed += n.removed
	rep.Versions.Failed += n.failed
	rep.Versions.Bytes += n.bytes
	if err != nil {
		failures.add(fmt.Errorf("old versions: %w", err))
	}
}
