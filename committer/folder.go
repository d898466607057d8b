package committer

// Operations on an output folder as a whole, for the sink's run-wide
// barrier, its markers and manifests, and s3once verify: what a key holds,
// objects written once, listings, and the discarding of a refused run's
// uploads. Every call runs under the committer's Policy (bounded per
// attempt, retried when transient), and every clean-up under one bound,
// CleanupTimeout.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// Holding is what a key holds, as Lookup found it.
type Holding struct {
	// Exists is false where the key is empty; the other fields are then zero.
	Exists bool
	Size   int64
	// CRC is the object's full-object CRC64NVME when HaveCRC: from the
	// server, or read back.
	CRC     uint64
	HaveCRC bool
	ETag    string
}

// Is reports whether the key holds exactly an object of size bytes with the
// CRC64NVME crc.
func (h Holding) Is(size int64, crc uint64) bool {
	return h.Exists && h.HaveCRC && h.Size == size && h.CRC == crc
}

// String describes what the key holds, for errors.
func (h Holding) String() string { return h.found().String() }

func (h Holding) found() found {
	return found{exists: h.Exists, size: h.Size, crc: h.CRC, haveCRC: h.HaveCRC, etag: h.ETag}
}

func holding(f found) Holding {
	return Holding{Exists: f.exists, Size: f.size, CRC: f.crc, HaveCRC: f.haveCRC, ETag: f.etag}
}

// Lookup tells what the key holds: a HEAD, and, where the server keeps no
// full-object CRC64NVME and the object has size bytes, a read-back that
// computes it (started again when the object changes under it). size < 0
// never reads back.
func (c *Committer) Lookup(ctx context.Context, bucket, key string, size int64) (Holding, error) {
	f, err := c.lookupKey(ctx, bucket, key, size)
	if err != nil {
		return Holding{}, fmt.Errorf("look at s3://%s/%s: %w", bucket, key, err)
	}
	return holding(f), nil
}

// ReadObject reads a small object whole: found is false where the key is
// empty. An object of more than max bytes is an error. A read that fails
// half-way starts again (If-Match the first ETag, so that the bytes are of
// one object), under the Policy.
func (c *Committer) ReadObject(ctx context.Context, bucket, key string, max int64) (body []byte, found bool, err error) {
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
		out, err := c.client.GetObject(ctx, in)
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
func (c *Committer) PutOnce(ctx context.Context, bucket, key string, body []byte, contentType string, max int64) (existing []byte, written bool, err error) {
	_, err = call(ctx, c, "put object once", func(ctx context.Context) (*s3.PutObjectOutput, error) {
		in := &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
			ContentLength: aws.Int64(int64(len(body))), IfNoneMatch: aws.String("*"),
		}
		if contentType != "" {
			in.ContentType = aws.String(contentType)
		}
		return c.client.PutObject(ctx, in)
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
func (c *Committer) List(ctx context.Context, bucket, prefix string, fn func([]Object) error) error {
	return c.listObjects(ctx, bucket, prefix, func(page []object) error {
		out := make([]Object, len(page))
		for i, o := range page {
			out[i] = Object{Key: o.key, Size: o.size, Modified: o.modified}
		}
		return fn(out)
	})
}

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
