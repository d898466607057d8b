package committer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
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
func (f found) matches(cr recoverable.CommitRecoverable) bool {
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

// lookup finds out what the key holds: HEAD, and where the server gives no
// full-object CRC64NVME for an object of the right size, a read-back.
func (c *Committer) lookup(ctx context.Context, cr recoverable.CommitRecoverable) (found, error) {
	for n := 1; ; n++ {
		f, err := c.head(ctx, cr.Bucket, cr.Key)
		if err != nil || !f.exists || f.haveCRC || f.size != cr.Size() {
			return f, err
		}
		f, err = c.readBack(ctx, cr, f)
		if errors.Is(err, errChanged) && n < c.opts.MaxAttempts {
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
		if recoverable.IsNotFound(err) {
			return found{}, nil
		}
		return found{}, err
	}
	f := found{exists: true, size: aws.ToInt64(out.ContentLength), etag: aws.ToString(out.ETag)}
	// CRC64NVME is always a full-object checksum; only a server that says
	// otherwise is not believed.
	if crc, ok := recoverable.DecodeCRC(aws.ToString(out.ChecksumCRC64NVME)); ok && out.ChecksumType != types.ChecksumTypeComposite {
		f.crc, f.haveCRC = crc, true
	}
	return f, nil
}

var errChanged = errors.New("object changed while being read back")

// readBack reads the object HEAD saw (If-Match its ETag) and computes its
// CRC64NVME, streaming. A failed read starts over, up to MaxAttempts times.
// It is bounded by ctx only, not by the per-call timeout.
func (c *Committer) readBack(ctx context.Context, cr recoverable.CommitRecoverable, f found) (found, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key)}
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
			if isPreconditionFailed(err) || recoverable.IsNotFound(err) {
				return f, fmt.Errorf("%w: %w", errChanged, err)
			}
			if !IsRetryable(err) || ctx.Err() != nil {
				return f, fmt.Errorf("read back object: %w", err)
			}
			last = err
			continue
		}
		size, crc, err := crcOf(out.Body, buf, cr.Size())
		_ = out.Body.Close()
		if err != nil {
			if !IsRetryable(err) || ctx.Err() != nil {
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
		crc = recoverable.UpdateCRC64(crc, buf[:k])
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
