package committer

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/recoverable"
)

// found is what the token's key holds.
type found = s3bucket.Holding

func describe(size int64, crc uint64) string {
	return fmt.Sprintf("%d bytes with CRC64NVME %016x", size, crc)
}

// lookup finds out what the token's key holds: a HEAD, and where the server
// gives no full-object CRC64NVME for an object of the token's size, a
// read-back (s3bucket.Client.Look).
func (c *Committer) lookup(ctx context.Context, cr recoverable.CommitToken) (found, error) {
	return c.b.Look(ctx, cr.Bucket, cr.Key, cr.Size())
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
	n, ok := etagPartCount(f.ETag)
	if !ok || n != len(parts) || strings.EqualFold(unquote(f.ETag), want) {
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
				Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), PartNumber: aws.Int32(1), IfMatch: aws.String(f.ETag),
			})
		})
		if err != nil {
			return nil, fmt.Errorf("compare the key's part layout with the token's: %w", err)
		}
		if aws.ToInt32(out.PartsCount) != int32(len(parts)) || aws.ToInt64(out.ContentLength) != parts[0].Size {
			return nil, nil // cut differently (another PartSize): ETags cannot be compared
		}
	}
	return &forgery{got: unquote(f.ETag), want: want}, nil
}
