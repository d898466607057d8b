package recoverable

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
)

// Writer opens recoverable streams and recovers them from tokens. It is safe for
// concurrent use; each Stream is not.
//
// Part buffers are the Writer's: a stream takes them from the Writer's pool
// and gives them back when it is closed for commit or disposed, so a Writer
// writing file after file allocates them once. The pool keeps at most
// Concurrency+1 idle buffers of PartSize bytes (a stream recovered with
// another part size allocates its own, and leaves them to the collector).
// Memory of a Writer: PartSize x (Concurrency+1) per open stream, plus at most
// PartSize x (Concurrency+1) idle; a Writer with one stream open at a time
// holds PartSize x (Concurrency+1) in all. A buffer returns to the pool only
// once no request can read it any more, retries included.
type Writer struct {
	client S3
	opts   Options
	pool   *partPool // part buffers of finished streams, for the next ones
}

// NewWriter returns a Writer over client. The options are checked against S3's
// limits; an error wraps ErrInvalidOptions and lists every problem.
func NewWriter(client S3, opts Options) (*Writer, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil S3 client", ErrInvalidOptions)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Writer{client: client, opts: o, pool: newPartPool(o.PartSize, o.Concurrency+1)}, nil
}

// Options returns the writer's options with defaults filled in.
func (w *Writer) Options() Options { return w.opts }

// ObjectOptions set metadata of the object a stream will become.
type ObjectOptions struct {
	ContentType     string
	ContentEncoding string
}

// Open starts a new file at bucket/key: it creates a multipart upload. Nothing is
// visible at the key until the stream's commit token is committed.
//
// ctx bounds the stream's life: its background part uploads run under it, and
// cancelling it fails the stream. Dispose the stream when done with it.
func (w *Writer) Open(ctx context.Context, bucket, key string, oo ObjectOptions) (*Stream, error) {
	if bucket == "" || key == "" {
		return nil, fmt.Errorf("%w: empty bucket or key", ErrInvalidOptions)
	}
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if oo.ContentType != "" {
		in.ContentType = aws.String(oo.ContentType)
	}
	if oo.ContentEncoding != "" {
		in.ContentEncoding = aws.String(oo.ContentEncoding)
	}
	if !w.opts.DisableChecksums {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc64nvme
		in.ChecksumType = types.ChecksumTypeFullObject
	}
	// A retried create may leave an unused upload behind; no token names it,
	// so the sweep removes it.
	out, err := s3call.Do(ctx, w.opts.policy(), "create multipart upload", func(ctx context.Context) (*s3.CreateMultipartUploadOutput, error) {
		return w.client.CreateMultipartUpload(ctx, in)
	})
	if err != nil {
		return nil, &Error{Op: "open", Bucket: bucket, Key: key, Err: err}
	}
	if aws.ToString(out.UploadId) == "" {
		return nil, &Error{Op: "open", Bucket: bucket, Key: key, Err: errors.New("server returned an empty upload ID")}
	}
	return w.newStream(ctx, bucket, key, aws.ToString(out.UploadId), w.opts.PartSize, w.opts.StagingPrefix), nil
}

// Recover rebuilds a stream from a resume token: it checks the upload's parts
// against the token, fetches the tail (from the token or its side object),
// checks the tail's length and checksum, and returns a stream positioned right
// after the token's bytes. Bytes written after the token was taken are not there
// (they will be overwritten). Recover destroys nothing the token references, so
// the same token can be recovered again.
//
// The recovered stream keeps the token's part size and staging prefix, whatever
// this writer's options say, so the file's layout never changes mid-way.
func (w *Writer) Recover(ctx context.Context, rr ResumeToken) (*Stream, error) {
	if err := rr.Validate(); err != nil {
		return nil, rr.fail("recover", err, "")
	}
	tail, err := w.fetchTail(ctx, rr)
	if err != nil {
		return nil, err
	}
	if _, err := verifyParts(ctx, w.client, w.opts.policy(), rr.Bucket, rr.Key, rr.UploadID, rr.Parts); err != nil {
		return nil, err
	}
	s := w.newStream(ctx, rr.Bucket, rr.Key, rr.UploadID, rr.PartSize, rr.StagingPrefix)
	s.parts = rr.Parts
	s.nextPart = int32(rr.Parts.Count) + 1
	s.seq = rr.Seq
	s.persisted = true
	s.pos = rr.Size()
	s.buf = s.takeBuffer()
	if !mutDropTail() {
		s.buf = append(s.buf, tail...)
		s.bufCRC = rr.Tail.CRC // fetchTail checked it against the bytes
	}
	return s, nil
}

// RecoverForCommit recovers the stream and closes it for commit at once: the
// token's tail becomes the upload's last part. The result commits exactly the
// bytes the token describes.
func (w *Writer) RecoverForCommit(ctx context.Context, rr ResumeToken) (CommitToken, error) {
	s, err := w.Recover(ctx, rr)
	if err != nil {
		return CommitToken{}, err
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		_ = s.Dispose(ctx)
		return CommitToken{}, err
	}
	return cr, nil
}

// Cleanup deletes the side object of a token whose checkpoint is retired. It
// never touches the upload. A side object that is already gone is not an error.
//
// The token is untrusted: Cleanup deletes only a side object of the token's
// upload (ownkeys.IsSideObjectOf), and only under this Writer's staging
// prefix. A token that fails Validate gives ErrInvalidToken, one whose staging
// prefix is another gives ErrForeignStaging; either way nothing is deleted.
func (w *Writer) Cleanup(ctx context.Context, rr ResumeToken) error {
	if err := rr.Validate(); err != nil {
		return rr.fail("cleanup", err, "nothing was deleted")
	}
	if rr.Tail.Object == "" {
		return nil
	}
	if !ownkeys.SameFolder(rr.StagingPrefix, w.opts.StagingPrefix) {
		return rr.fail("cleanup", fmt.Errorf("%w: %q, this writer's is %q", ErrForeignStaging, rr.StagingPrefix, w.opts.StagingPrefix), hintForeignStaging)
	}
	_, err := w.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(rr.Bucket), Key: aws.String(rr.Tail.Object)})
	if err != nil && !s3call.IsNotFound(err) {
		return rr.fail("cleanup", fmt.Errorf("delete side object %s: %w", rr.Tail.Object, err), "")
	}
	return nil
}

func (w *Writer) fetchTail(ctx context.Context, rr ResumeToken) ([]byte, error) {
	t := rr.Tail
	if t.Len == 0 {
		return nil, nil
	}
	var data []byte
	if t.Object == "" {
		data = t.Inline
	} else {
		// Validate has checked this already; a tail is read only from the
		// token's own side-object folder, whoever calls.
		if err := checkTailObject(rr.StagingPrefix, rr.UploadID, t.Object); err != nil {
			return nil, rr.fail("recover", err, "")
		}
		var err error
		data, err = s3call.Do(ctx, w.opts.policy(), "get side object "+t.Object, func(ctx context.Context) ([]byte, error) {
			out, err := w.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(rr.Bucket), Key: aws.String(t.Object)})
			if err != nil {
				return nil, err
			}
			defer out.Body.Close()
			// Read at most one byte more than expected, so a longer object
			// is caught without reading all of it.
			return io.ReadAll(io.LimitReader(out.Body, t.Len+1))
		})
		if err != nil {
			if s3call.IsNotFound(err) {
				return nil, rr.fail("recover", fmt.Errorf("%w: %w", ErrSideObjectMissing, err), hintTail)
			}
			return nil, rr.fail("recover", err, "")
		}
	}
	if int64(len(data)) != t.Len {
		return nil, rr.fail("recover", fmt.Errorf("%w: tail holds %d bytes, token says %d", ErrTailCorrupt, len(data), t.Len), hintTail)
	}
	if c := crc64nvme.Checksum(data); c != t.CRC {
		return nil, rr.fail("recover", fmt.Errorf("%w: tail CRC64NVME %016x, token says %016x", ErrTailCorrupt, c, t.CRC), hintTail)
	}
	return data, nil
}
