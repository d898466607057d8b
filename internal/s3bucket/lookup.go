package s3bucket

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/internal/s3call"
)

// readBackChunk is the buffer a read-back streams through: memory stays
// constant whatever the object's size.
const readBackChunk = 1 << 20

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
	// ReadBack says the CRC was computed from the object's bytes, the
	// server keeping none.
	ReadBack bool
}

// Is reports whether the key holds exactly an object of size bytes with the
// CRC64NVME crc.
func (h Holding) Is(size int64, crc uint64) bool {
	return h.Exists && h.HaveCRC && h.Size == size && h.CRC == crc
}

// String describes what the key holds, for errors.
func (h Holding) String() string {
	if !h.Exists {
		return "nothing"
	}
	if !h.HaveCRC {
		return fmt.Sprintf("an object of %d bytes (ETag %s)", h.Size, h.ETag)
	}
	return fmt.Sprintf("an object of %d bytes with CRC64NVME %016x (ETag %s)", h.Size, h.CRC, h.ETag)
}

// Lookup tells what the key holds: a HEAD, and, where the server keeps no
// full-object CRC64NVME and the object has size bytes, a read-back that
// computes it (started again when the object changes under it, up to
// MaxRounds looks). size < 0 never reads back.
func (c *Client) Lookup(ctx context.Context, bucket, key string, size int64) (Holding, error) {
	h, err := c.Look(ctx, bucket, key, size)
	if err != nil {
		return Holding{}, fmt.Errorf("look at s3://%s/%s: %w", bucket, key, err)
	}
	return h, nil
}

// Look is Lookup with its errors not annotated with the key, for callers
// that name the key in their own errors (the commit protocol). Beside an
// error it may return what the last look saw.
func (c *Client) Look(ctx context.Context, bucket, key string, size int64) (Holding, error) {
	for n := 1; ; n++ {
		h, err := c.Head(ctx, bucket, key)
		if err != nil || !h.Exists || h.HaveCRC || h.Size != size || size < 0 {
			return h, err
		}
		h, err = c.readBack(ctx, bucket, key, size, h)
		if errors.Is(err, errChanged) && n < c.o.MaxRounds {
			continue // the object was replaced between HEAD and GET: look again
		}
		return h, err
	}
}

// Head is one HEAD of the key (under the Policy): its size, ETag and, where
// the server keeps one, its full-object CRC64NVME. An empty key is the zero
// Holding.
func (c *Client) Head(ctx context.Context, bucket, key string) (Holding, error) {
	out, err := call(ctx, c, "head object", func(ctx context.Context) (*s3.HeadObjectOutput, error) {
		return c.api.HeadObject(ctx, &s3.HeadObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled,
		})
	})
	if err != nil {
		if s3call.IsNotFound(err) {
			return Holding{}, nil
		}
		return Holding{}, err
	}
	h := Holding{Exists: true, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}
	// CRC64NVME is always a full-object checksum; only a server that says
	// otherwise is not believed.
	if crc, ok := s3call.DecodeCRC(aws.ToString(out.ChecksumCRC64NVME)); ok && out.ChecksumType != types.ChecksumTypeComposite {
		h.CRC, h.HaveCRC = crc, true
	}
	return h, nil
}

var errChanged = errors.New("object changed while being read back")

// readBack reads the object HEAD saw (If-Match its ETag) and computes its
// CRC64NVME, streaming. A failed read starts over, up to MaxAttempts times.
// It is bounded by ctx only, not by the per-call timeout.
func (c *Client) readBack(ctx context.Context, bucket, key string, limit int64, h Holding) (Holding, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if h.ETag != "" {
		in.IfMatch = aws.String(h.ETag)
	}
	buf := make([]byte, readBackChunk)
	var last error
	for n := 1; n <= c.o.MaxAttempts; n++ {
		if n > 1 {
			if err := c.sleep(ctx, n-1); err != nil {
				return h, fmt.Errorf("read back object: %w (last failure: %w)", err, last)
			}
		}
		out, err := c.api.GetObject(ctx, in)
		if err != nil {
			if s3call.IsPreconditionFailed(err) || s3call.IsNotFound(err) {
				return h, fmt.Errorf("%w: %w", errChanged, err)
			}
			if !s3call.IsRetryable(err) || ctx.Err() != nil {
				return h, fmt.Errorf("read back object: %w", err)
			}
			last = err
			continue
		}
		size, crc, err := crcOf(out.Body, buf, limit)
		_ = out.Body.Close()
		if err != nil {
			if !s3call.IsRetryable(err) || ctx.Err() != nil {
				return h, fmt.Errorf("read back object: %w", err)
			}
			last = err
			continue
		}
		h.Size, h.CRC, h.HaveCRC, h.ReadBack = size, crc, true, true
		return h, nil
	}
	return h, fmt.Errorf("read back object: giving up after %d attempts: %w", c.o.MaxAttempts, last)
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
