package committer

// Listing and deleting objects in bulk: the clean-up after a commit and the
// sweep both go through these.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/s3call"
)

// deleteBatch is the most keys one DeleteObjects call takes.
const deleteBatch = 1000

// object is one listed object.
type object struct {
	key      string
	size     int64
	modified time.Time
}

// listObjects calls fn with every page of objects under prefix.
func (c *Committer) listObjects(ctx context.Context, bucket, prefix string, fn func([]object) error) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)}
	return s3call.ListObjects(ctx, c.client, c.policy(), in, func(out *s3.ListObjectsV2Output) (bool, error) {
		page := make([]object, 0, len(out.Contents))
		for _, o := range out.Contents {
			page = append(page, object{key: aws.ToString(o.Key), size: aws.ToInt64(o.Size), modified: aws.ToTime(o.LastModified)})
		}
		return true, fn(page)
	})
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
			if !s3call.IsNotImplemented(err) {
				return deleted, errors.Join(append(errs, err)...)
			}
			n, err := c.deleteEach(ctx, bucket, batch)
			deleted += n
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		// A key already gone is deleted: S3 reports no error for it, but
		// some servers (versitygw) report NoSuchKey, for instance when a
		// commit's clean-up removed the key a moment before.
		failed := 0
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			if failed == 3 {
				failed++
				continue
			}
			failed++
			errs = append(errs, fmt.Errorf("delete %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message)))
		}
		if failed > 3 {
			errs = append(errs, fmt.Errorf("and %d more keys could not be deleted", failed-3))
		}
		deleted += len(batch) - failed
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
		if err != nil && !s3call.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", k, err))
			continue
		}
		deleted++
	}
	return deleted, errors.Join(errs...)
}
