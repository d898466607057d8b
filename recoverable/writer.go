package recoverable

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/ownkeys"
)

// abortTimeout bounds the cleanup calls that run after the caller's context is gone.
const abortTimeout = 30 * time.Second

// Writer opens recoverable streams and recovers them from tokens. It is safe for
// concurrent use; each Stream is not.
type Writer struct {
	client S3
	opts   Options
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
	return &Writer{client: client, opts: o}, nil
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
	out, err := attempt(ctx, w.opts.CallTimeout, "create multipart upload", func(ctx context.Context) (*s3.CreateMultipartUploadOutput, error) {
		return w.client.CreateMultipartUpload(ctx, in)
	})
	if err != nil {
		return nil, &Error{Op: "open", Bucket: bucket, Key: key, Err: fmt.Errorf("create multipart upload: %w", err)}
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
func (w *Writer) Recover(ctx context.Context, rr ResumeRecoverable) (*Stream, error) {
	if err := rr.Validate(); err != nil {
		return nil, rr.fail("recover", err, "")
	}
	tail, err := w.fetchTail(ctx, rr)
	if err != nil {
		return nil, err
	}
	if _, err := attempt(ctx, w.opts.CallTimeout, "list parts", func(ctx context.Context) ([]Part, error) {
		return VerifyParts(ctx, w.client, rr.Bucket, rr.Key, rr.UploadID, rr.Parts)
	}); err != nil {
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
	}
	return s, nil
}

// RecoverForCommit recovers the stream and closes it for commit at once: the
// token's tail becomes the upload's last part. The result commits exactly the
// bytes the token describes.
func (w *Writer) RecoverForCommit(ctx context.Context, rr ResumeRecoverable) (CommitRecoverable, error) {
	s, err := w.Recover(ctx, rr)
	if err != nil {
		return CommitRecoverable{}, err
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		_ = s.Dispose(ctx)
		return CommitRecoverable{}, err
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
func (w *Writer) Cleanup(ctx context.Context, rr ResumeRecoverable) error {
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
	if err != nil && !IsNotFound(err) {
		return rr.fail("cleanup", fmt.Errorf("delete side object %s: %w", rr.Tail.Object, err), "")
	}
	return nil
}

func (w *Writer) fetchTail(ctx context.Context, rr ResumeRecoverable) ([]byte, error) {
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
		data, err = attempt(ctx, w.opts.CallTimeout, "get side object", func(ctx context.Context) ([]byte, error) {
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
			if IsNotFound(err) {
				return nil, rr.fail("recover", fmt.Errorf("%w: %s: %w", ErrSideObjectMissing, t.Object, err), hintTail)
			}
			return nil, rr.fail("recover", fmt.Errorf("get side object %s: %w", t.Object, err), "")
		}
	}
	if int64(len(data)) != t.Len {
		return nil, rr.fail("recover", fmt.Errorf("%w: tail holds %d bytes, token says %d", ErrTailCorrupt, len(data), t.Len), hintTail)
	}
	if c := CRC64(data); c != t.CRC {
		return nil, rr.fail("recover", fmt.Errorf("%w: tail CRC64NVME %016x, token says %016x", ErrTailCorrupt, c, t.CRC), hintTail)
	}
	return data, nil
}

// Validate checks the token's internal consistency (not the upload): among
// others, that a side-object tail lies in SideObjectPrefix(StagingPrefix,
// UploadID) and is named as the stream names side objects. Recover and Cleanup
// call it, and so do the coder's decoders, so a corrupted or hostile token
// never makes s3once read or delete another key.
func (rr ResumeRecoverable) Validate() error {
	switch {
	case rr.Bucket == "" || rr.Key == "" || rr.UploadID == "":
		return fmt.Errorf("%w: bucket, key and upload ID are required", ErrInvalidToken)
	case rr.PartSize < MinPartSize || rr.PartSize > MaxPartSize:
		return fmt.Errorf("%w: part size %d outside S3's limits", ErrInvalidToken, rr.PartSize)
	case rr.Parts.Count < 0 || rr.Parts.Count > MaxS3Parts:
		return fmt.Errorf("%w: part count %d", ErrInvalidToken, rr.Parts.Count)
	case rr.Parts.Bytes != int64(rr.Parts.Count)*rr.PartSize:
		return fmt.Errorf("%w: %d parts of %d bytes cannot hold %d bytes", ErrInvalidToken, rr.Parts.Count, rr.PartSize, rr.Parts.Bytes)
	case rr.Tail.Len < 0 || rr.Tail.Len > rr.PartSize:
		return fmt.Errorf("%w: tail length %d", ErrInvalidToken, rr.Tail.Len)
	case rr.Tail.Object != "" && rr.Tail.Inline != nil:
		return fmt.Errorf("%w: tail is both inline and a side object", ErrInvalidToken)
	case rr.Tail.Object == "" && int64(len(rr.Tail.Inline)) != rr.Tail.Len:
		return fmt.Errorf("%w: inline tail holds %d bytes, token says %d", ErrInvalidToken, len(rr.Tail.Inline), rr.Tail.Len)
	case rr.Tail.Len == 0 && rr.Tail.CRC != 0:
		return fmt.Errorf("%w: empty tail with a checksum", ErrInvalidToken)
	}
	return checkTailObject(rr.StagingPrefix, rr.UploadID, rr.Tail.Object)
}

func (rr ResumeRecoverable) fail(op string, err error, hint string) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Op: op, Bucket: rr.Bucket, Key: rr.Key, UploadID: rr.UploadID, Hint: hint, Err: err}
}

// PartLister lists the parts of a multipart upload.
type PartLister interface {
	ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error)
}

// VerifyParts lists parts 1..want.Count of the upload and checks them against
// want: parts numbered 1..Count without a gap, holding want.Bytes in all, and
// the same bytes. Where the server lists every part's CRC64NVME, the bytes are
// checked by the checksums alone: the listed parts' checksums, chained in part
// order, must give want.CRC. ETags are then not compared, since they name one
// upload of a part rather than its bytes wherever the bucket encrypts with
// SSE-KMS: a part uploaded again with the same bytes (a zombie replaying the
// same records, a stalled upload landing late) has another ETag and the same
// content. Only where the server lists no part checksums does the chain of
// ETags in want.Digest stand for the bytes.
//
// It returns the parts, in order, with the ETags just listed, ready for
// CompleteMultipartUpload. Parts numbered above want.Count are ignored: they
// belong to writes after the token was taken, or to a zombie writer.
//
// Errors wrap ErrNoSuchUpload or ErrPartsChanged in an *Error.
func VerifyParts(ctx context.Context, api PartLister, bucket, key, uploadID string, want PartList) ([]Part, error) {
	fail := func(err error, hint string) error {
		return &Error{Op: "verify parts", Bucket: bucket, Key: key, UploadID: uploadID, Hint: hint, Err: err}
	}
	parts := make([]Part, 0, min(want.Count, 1000))
	var marker *string
	allCRC := true
	for {
		out, err := api.ListParts(ctx, &s3.ListPartsInput{
			Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(uploadID),
			PartNumberMarker: marker,
		})
		if err != nil {
			if IsNoSuchUpload(err) {
				return nil, fail(fmt.Errorf("%w: %w", ErrNoSuchUpload, err), hintUploadGone)
			}
			return nil, fail(fmt.Errorf("list parts: %w", err), "")
		}
		done := false
		for _, p := range out.Parts {
			n := aws.ToInt32(p.PartNumber)
			if int(n) > want.Count {
				done = true
				break
			}
			if int(n) != len(parts)+1 {
				return nil, fail(fmt.Errorf("%w: part %d missing (server listed part %d next)", ErrPartsChanged, len(parts)+1, n), hintParts)
			}
			part := Part{Number: n, Size: aws.ToInt64(p.Size), ETag: aws.ToString(p.ETag)}
			if c, ok := decodeCRC(aws.ToString(p.ChecksumCRC64NVME)); ok {
				part.CRC = c
			} else {
				allCRC = false
			}
			parts = append(parts, part)
		}
		if done || !aws.ToBool(out.IsTruncated) || len(out.Parts) == 0 {
			break
		}
		marker = out.NextPartNumberMarker
		if aws.ToString(marker) == "" {
			break
		}
	}
	if len(parts) != want.Count {
		return nil, fail(fmt.Errorf("%w: upload has %d of the token's %d parts", ErrPartsChanged, len(parts), want.Count), hintParts)
	}
	if err := sameParts(parts, want, allCRC); err != nil {
		return nil, fail(err, hintParts)
	}
	if !allCRC {
		// Without listed checksums the token's own are the only ones there are.
		for i := range parts {
			parts[i].CRC = 0
		}
	}
	return parts, nil
}

// sameParts tells whether the listed parts 1..want.Count hold the bytes want
// describes: by their sizes and, with listed checksums, their CRC64NVME
// chained in order (which changes whenever any one part's does), else by the
// chain of their ETags.
func sameParts(parts []Part, want PartList, listedCRC bool) error {
	got := Chain(parts)
	if got.Bytes != want.Bytes {
		return fmt.Errorf("%w: parts hold %d bytes, token says %d", ErrPartsChanged, got.Bytes, want.Bytes)
	}
	if listedCRC {
		if got.CRC != want.CRC {
			return fmt.Errorf("%w: parts' CRC64NVME %016x, token says %016x", ErrPartsChanged, got.CRC, want.CRC)
		}
		return nil
	}
	if got.Digest != want.Digest {
		return fmt.Errorf("%w: part sizes or ETags differ from the token, and the server lists no part checksums to compare the bytes by", ErrPartsChanged)
	}
	return nil
}

// EncodeCRC renders a CRC64NVME the way S3 headers carry it.
func EncodeCRC(c uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], c)
	return base64.StdEncoding.EncodeToString(b[:])
}

func decodeCRC(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}

// DecodeCRC parses a CRC64NVME header value; ok is false when s is not one.
func DecodeCRC(s string) (crc uint64, ok bool) { return decodeCRC(s) }

func newNonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func bodyOf(p []byte) io.ReadSeeker { return bytes.NewReader(p) }
