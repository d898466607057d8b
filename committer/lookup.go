package committer

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// readBackChunk is the buffer a read-back streams through: memory stays
// constant whatever the object's size.
const readBackChunk = 1 << 20

// found is what the key holds.
type found struct {
	exists   bool
	size     int64
	crc      uint64
	haveCRC  bool // crc is known (from the server or read back)
	etag     string
	readBack bool
}

// matches reports whether the key holds the token's bytes.
func (f found) matches(cr recoverable.CommitToken) bool {
	return f.exists && f.haveCRC && f.size == cr.Size() && f.crc == cr.CRC()
}

func (f found) String() string {
	if !f.exists {
		return "nothing"
	}
	if !f.haveCRC {
		return fmt.Sprintf("an object of %d bytes (ETag %s)", f.size, f.etag)
	}
	return fmt.Sprintf("an object of %d bytes with CRC64NVME %016x (ETag %s)", f.size, f.crc, f.etag)
}

func describe(size int64, crc uint64) string {
	return fmt.Sprintf("%d bytes with CRC64NVME %016x", size, crc)
}

// lookup finds out what the token's key holds (lookupKey).
func (c *Committer) lookup(ctx context.Context, cr recoverable.CommitToken) (found, error) {
	return c.lookupKey(ctx, cr.Bucket, cr.Key, cr.Size())
}

// lookupKey finds out what the key holds: HEAD, and where the server gives
// no full-object CRC64NVME for an object of size bytes, a read-back (size
// < 0: never).
func (c *Committer) lookupKey(ctx context.Context, bucket, key string, size int64) (found, error) {
	for n := 1; ; n++ {
		f, err := c.head(ctx, bucket, key)
		if err != nil || !f.exists || f.haveCRC || f.size != size || size < 0 {
			return f, err
		}
		f, err = c.readBack(ctx, bucket, key, size, f)
		if errors.Is(err, errChanged) && n < c.opts.MaxRounds {
			continue // the object was replaced between HEAD and GET: look again
		}
		return f, err
	}
}

func (c *Committer) head(ctx context.Context, bucket, key string) (found, error) {
	out, err := call(ctx, c, "head object", func(ctx context.Context) (*s3.HeadObjectOutput, error) {
		return c.client.HeadObject(ctx, &s3.HeadObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled,
		})
	})
	if err != nil {
		if s3call.IsNotFound(err) {
			return found{}, nil
		}
		return found{}, err
	}
	f := found{exists: true, size: aws.ToInt64(out.ContentLength), etag: aws.ToString(out.ETag)}
	// CRC64NVME is always a full-object checksum; only a server that says
	// otherwise is not believed.
	if crc, ok := s3call.DecodeCRC(aws.ToString(out.ChecksumCRC64NVME)); ok && out.ChecksumType != types.ChecksumTypeComposite {
		f.crc, f.haveCRC = crc, true
	}
	return f, nil
}

var errChanged = errors.New("object changed while being read back")

// readBack reads the object HEAD saw (If-Match its ETag) and computes its
// CRC64NVME, streaming. A failed read starts over, up to MaxAttempts times.
// It is bounded by ctx only, not by the per-call timeout.
func (c *Committer) readBack(ctx context.Context, bucket, key string, limit int64, f found) (found, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if f.etag != "" {
		in.IfMatch = aws.String(f.etag)
	}
	buf := make([]byte, readBackChunk)
	var last error
	for n := 1; n <= c.opts.MaxAttempts; n++ {
		if n > 1 {
			if err := c.sleep(ctx, n-1); err != nil {
				return f, fmt.Errorf("read back object: %w (last failure: %w)", err, last)
			}
		}
		out, err := c.client.GetObject(ctx, in)
		if err != nil {
			if s3call.IsPreconditionFailed(err) || s3call.IsNotFound(err) {
				return f, fmt.Errorf("%w: %w", errChanged, err)
			}
			if !s3call.IsRetryable(err) || ctx.Err() != nil {
				return f, fmt.Errorf("read back object: %w", err)
			}
			last = err
			continue
		}
		size, crc, err := crcOf(out.Body, buf, limit)
		_ = out.Body.Close()
		if err != nil {
			if !s3call.IsRetryable(err) || ctx.Err() != nil {
				return f, fmt.Errorf("read back object: %w", err)
			}
			last = err
			continue
		}
		f.size, f.crc, f.haveCRC, f.readBack = size, crc, true, true
		return f, nil
	}
	return f, fmt.Errorf("read back object: giving up after %d attempts: %w", c.opts.MaxAttempts, last)
}

// crcOf streams r through buf and returns its length and CRC64NVME. It stops
// once more than limit bytes were read: the length alone then settles it.
func crcOf(r io.Reader, buf []byte, limit int64) (int64, uint64, error) {
	var n int64
	var crc uint64
	for {
		k, err := r.Read(buf)
		crc = crc64nvme.Update(crc, buf[:k])
		n += int64(k)
		if n > limit {
			return n, crc, nil
		}
		if err == io.EOF {
			return n, crc, nil
		}
		if err != nil {
			return n, crc, err
		}
	}
}

// multipartETag computes the ETag S3 gives an object completed from parts
// whose ETags are the MD5s of their bytes: the MD5 of the parts' binary MD5s,
// then "-" and the part count. ok is false when a part's ETag is not an MD5.
func multipartETag(parts []recoverable.Part) (etag string, ok bool) {
	h := md5.New()
	for _, p := range parts {
		b, err := hex.DecodeString(unquote(p.ETag))
		if err != nil || len(b) != md5.Size {
			return "", false
		}
		h.Write(b)
	}
	return fmt.Sprintf("%x-%d", h.Sum(nil), len(parts)), true
}

// etagPartCount returns N of a multipart ETag "<hex>-N"; ok is false for any
// other ETag.
func etagPartCount(etag string) (n int, ok bool) {
	etag = unquote(etag)
	i := strings.LastIndexByte(etag, '-')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(etag[i+1:])
	return n, err == nil && n > 0
}

// forgery is what sameContent found when an object with the token's size and
// CRC64NVME has other bytes.
type forgery struct{ got, want string }

func (f *forgery) Error() string {
	return fmt.Sprintf("the key's object has the token's size and CRC64NVME but multipart ETag %s, while the token's parts, in the same layout, make %s", f.got, f.want)
}

// sameContent is the second opinion on an object that matches the token's
// size and CRC64NVME, which can be forged (CRC is affine). It asks nothing
// of the server unless the ETags disagree, and judges only where the answer
// is sure: the bucket's ETags are known to be MD5s (Preflight), the token's
// parts are at hand (listed from the upload and checked against the token),
// and the object's ETag is a multipart ETag of the same part count. Then
// equal ETags prove the same bytes; unequal ones prove other bytes only if
// the object was cut into the same parts, which HEAD with partNumber=1 tells
// for uniform layouts (every part but the last of part 1's size, as the
// recoverable writer makes them): another PartSize gives another part 1.
// A non-nil *forgery means other bytes; in every other case the size and
// CRC64NVME stand.
func (c *Committer) sameContent(ctx context.Context, cr recoverable.CommitToken, f found, parts []recoverable.Part) (*forgery, error) {
	if len(parts) == 0 || !c.etagsAreMD5(cr.Bucket) {
		return nil, nil
	}
	want, ok := multipartETag(parts)
	if !ok {
		return nil, nil
	}
	n, ok := etagPartCount(f.etag)
	if !ok || n != len(parts) || strings.EqualFold(unquote(f.etag), want) {
		return nil, nil
	}
	for _, p := range parts[:len(parts)-1] {
		if p.Size != parts[0].Size {
			return nil, nil // not a layout HEAD partNumber=1 can confirm
		}
	}
	if len(parts) > 1 {
		out, err := call(ctx, c, "head object part 1", func(ctx context.Context) (*s3.HeadObjectOutput, error) {
			return c.client.HeadObject(ctx, &s3.HeadObjectInput{
				Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), PartNumber: aws.Int32(1), IfMatch: aws.String(f.etag),
			})
		})
		if err != nil {
			return nil, fmt.Errorf("compare the key's part layout with the token's: %w", err)
		}
		if aws.ToInt32(out.PartsCount) != int32(len(parts)) || aws.ToInt64(out.ContentLength) != parts[0].Size {
			return nil, nil // cut differently (another PartSize): ETags cannot be compared
		}
	}
	return &forgery{got: unquote(f.etag), want: want}, nil
}
