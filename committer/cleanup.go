package committer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/recoverable"
)

// deleteBatch is the most keys one DeleteObjects call takes.
const deleteBatch = 1000

// object is one listed object.
type object struct {
	key      string
	size     int64
	modified time.Time
}

// deleteSideObjects deletes the side objects of the token's upload. The token
// is untrusted: only keys under the committer's own staging prefix, in the
// upload's folder and named as side objects are (ownkeys.IsSideObjectOf),
// are deleted. A token that names another staging prefix gets an error
// wrapping recoverable.ErrForeignStaging and nothing is deleted: its side
// objects (of tokens taken before a change of StagingPrefix, say) are left
// to a sweep of that prefix. A token without a staging prefix has none.
func (c *Committer) deleteSideObjects(ctx context.Context, cr recoverable.CommitRecoverable) (int, error) {
	if cr.StagingPrefix == "" {
		return 0, nil
	}
	staging := c.opts.StagingPrefix
	if !ownkeys.SameFolder(cr.StagingPrefix, staging) {
		return 0, fmt.Errorf("%w: %q, the committer's is %q; nothing was deleted (a sweep with --staging-prefix %q removes side objects of tokens taken before a change)",
			recoverable.ErrForeignStaging, cr.StagingPrefix, staging, cr.StagingPrefix)
	}
	prefix := ownkeys.SideObjectPrefix(staging, cr.UploadID)
	var keys []string
	err := c.listObjects(ctx, cr.Bucket, prefix, func(page []object) error {
		for _, o := range page {
			if ownkeys.IsSideObjectOf(staging, cr.UploadID, o.key) {
				keys = append(keys, o.key)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list side objects under %s: %w", prefix, err)
	}
	n, err := c.deleteKeys(ctx, cr.Bucket, keys)
	if err != nil {
		return n, fmt.Errorf("delete side objects under %s: %w", prefix, err)
	}
	if _, err := c.purgeVersions(ctx, cr.Bucket, prefix, func(k string) bool { return ownkeys.IsSideObjectOf(staging, cr.UploadID, k) }, false); err != nil {
		return n, err
	}
	return n, nil
}

// listObjects calls fn with every page of objects under prefix.
func (c *Committer) listObjects(ctx context.Context, bucket, prefix string, fn func([]object) error) error {
	var token *string
	for {
		out, err := call(ctx, c, "list objects", func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
			return c.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
				Bucket: aws.String(bucket), Prefix: aws.String(prefix), ContinuationToken: token,
			})
		})
		if err != nil {
			return err
		}
		page := make([]object, 0, len(out.Contents))
		for _, o := range out.Contents {
			page = append(page, object{key: aws.ToString(o.Key), size: aws.ToInt64(o.Size), modified: aws.ToTime(o.LastModified)})
		}
		if err := fn(page); err != nil {
			return err
		}
		if !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			return nil
		}
		token = out.NextContinuationToken
	}
}

// deleteKeys deletes keys in batches, falling back to one call per key on a
// server without DeleteObjects. It returns how many were deleted; keys that
// are already gone count as deleted.
func (c *Committer) deleteKeys(ctx context.Context, bucket string, keys []string) (int, error) {
	deleted := 0
	var errs []error
	for len(keys) > 0 {
		batch := keys[:min(len(keys), deleteBatch)]
		keys = keys[len(batch):]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i, k := range batch {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := call(ctx, c, "delete objects", func(ctx context.Context) (*s3.DeleteObjectsOutput, error) {
			return c.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
				Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
			})
		})
		if err != nil {
			if !rejectsCondition(err) {
				return deleted, errors.Join(append(errs, err)...)
			}
			n, err := c.deleteEach(ctx, bucket, batch)
			deleted += n
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		deleted += len(batch) - len(out.Errors)
		for i, e := range out.Errors {
			if i == 3 {
				errs = append(errs, fmt.Errorf("and %d more keys could not be deleted", len(out.Errors)-i))
				break
			}
			errs = append(errs, fmt.Errorf("delete %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message)))
		}
	}
	return deleted, errors.Join(errs...)
}

func (c *Committer) deleteEach(ctx context.Context, bucket string, keys []string) (int, error) {
	deleted := 0
	var errs []error
	for _, k := range keys {
		_, err := call(ctx, c, "delete object", func(ctx context.Context) (*s3.DeleteObjectOutput, error) {
			return c.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		})
		if err != nil && !recoverable.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", k, err))
			continue
		}
		deleted++
	}
	return deleted, errors.Join(errs...)
}
