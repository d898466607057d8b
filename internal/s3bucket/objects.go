package s3bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/s3call"
)

// ReadObject reads a small object whole: found is false where the key is
// empty. An object of more than max bytes is an error. A read that fails
// half-way starts again (If-Match the first ETag, so that the bytes are of
// one object), under the Policy.
func (c *Client) ReadObject(ctx context.Context, bucket, key string, max int64) (body []byte, found bool, err error) {
	var etag string
	limit := max // one byte past max tells an object over max; max+1 must not wrap around
	if limit < math.MaxInt64 {
		limit++
	}
	read := func(ctx context.Context) ([]byte, error) {
		in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
		if etag != "" {
			in.IfMatch = aws.String(etag)
		}
		out, err := c.api.GetObject(ctx, in)
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		if etag == "" {
			etag = aws.ToString(out.ETag)
		}
		b, err := io.ReadAll(io.LimitReader(out.Body, limit))
		if err != nil {
			return nil, err
		}
		if int64(len(b)) > max {
			return nil, fmt.Errorf("%w: the object is larger than %d bytes", errTooLarge, max)
		}
		return b, nil
	}
	body, err = call(ctx, c, "read object", read)
	switch {
	case err == nil:
		return body, true, nil
	case s3call.IsNotFound(err) && etag == "":
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
}

var errTooLarge = errors.New("object too large")

// PutOnce writes body at key where the key is empty (If-None-Match: *).
// Where it is not, it reads what the key holds (ReadObject, at most max
// bytes) and returns it: written is then false and existing holds the
// object's bytes, for the caller to compare (a retried write that had
// landed reads back as body). A key that answers "taken" and then reads as
// empty is an error to retry.
func (c *Client) PutOnce(ctx context.Context, bucket, key string, body []byte, contentType string, max int64) (existing []byte, written bool, err error) {
	_, err = call(ctx, c, "put object once", func(ctx context.Context) (*s3.PutObjectOutput, error) {
		in := &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
			ContentLength: aws.Int64(int64(len(body))), IfNoneMatch: aws.String("*"),
		}
		if contentType != "" {
			in.ContentType = aws.String(contentType)
		}
		return c.api.PutObject(ctx, in)
	})
	if err == nil {
		return nil, true, nil
	}
	if !s3call.IsPreconditionFailed(err) && !s3call.IsConflict(err) {
		return nil, false, fmt.Errorf("write s3://%s/%s: %w", bucket, key, err)
	}
	have, found, rerr := c.ReadObject(ctx, bucket, key, max)
	switch {
	case rerr != nil:
		return nil, false, fmt.Errorf("s3://%s/%s exists (%w) and cannot be read: %w", bucket, key, err, rerr)
	case !found:
		return nil, false, fmt.Errorf("s3://%s/%s was refused as present and then not found; retry: %w", bucket, key, err)
	}
	return have, false, nil
}

// Object is one listed object.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
}

// List calls fn with every page of objects whose keys start with prefix, in
// key order; each page is one call under the Policy.
func (c *Client) List(ctx context.Context, bucket, prefix string, fn func([]Object) error) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)}
	return s3call.ListObjects(ctx, c.api, c.o.Policy(), in, func(out *s3.ListObjectsV2Output) (bool, error) {
		page := make([]Object, 0, len(out.Contents))
		for _, o := range out.Contents {
			page = append(page, Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)})
		}
		return true, fn(page)
	})
}

// DeleteBatch is the most keys one DeleteObjects call takes.
const DeleteBatch = 1000

// DeleteKeys deletes keys in batches, falling back to one call per key on
// a server without DeleteObjects. It returns how many were deleted; keys
// that are already gone count as deleted.
func (c *Client) DeleteKeys(ctx context.Context, bucket string, keys []string) (int, error) {
	deleted := 0
	var errs []error
	for len(keys) > 0 {
		batch := keys[:min(len(keys), DeleteBatch)]
		keys = keys[len(batch):]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i, k := range batch {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := call(ctx, c, "delete objects", func(ctx context.Context) (*s3.DeleteObjectsOutput, error) {
			return c.api.DeleteObjects(ctx, &s3.DeleteObjectsInput{
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

func (c *Client) deleteEach(ctx context.Context, bucket string, keys []string) (int, error) {
	deleted := 0
	var errs []error
	for _, k := range keys {
		_, err := call(ctx, c, "delete object", func(ctx context.Context) (*s3.DeleteObjectOutput, error) {
			return c.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		})
		if err != nil && !s3call.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", k, err))
			continue
		}
		deleted++
	}
	return deleted, errors.Join(errs...)
}
