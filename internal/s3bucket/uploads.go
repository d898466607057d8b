package s3bucket

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
)

// Upload is one open multipart upload, as a listing shows it.
type Upload struct {
	Key      string
	UploadID string
	// Initiated is the server's time of CreateMultipartUpload (zero where
	// the server gives none).
	Initiated time.Time
}

// ListUploads calls fn with every page of the open multipart uploads whose
// keys start with prefix ("" for the whole bucket), in key order; pages
// holding none are skipped. Each page is one call under the Policy. It
// reads only.
//
// Like the committer's sweep, it lists from a KeyMarker instead of a
// Prefix (MinIO matches a listing's Prefix as a whole key), keeps the keys
// that start with prefix, and stops after the first page that ends past
// them.
func (c *Client) ListUploads(ctx context.Context, bucket, prefix string, fn func([]Upload) error) error {
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}
	if prefix != "" {
		in.KeyMarker = aws.String(prefix)
	}
	err := s3call.ListUploads(ctx, c.api, c.o.Policy(), in, func(out *s3.ListMultipartUploadsOutput) (bool, error) {
		var page []Upload
		past := false
		for _, u := range out.Uploads {
			key := aws.ToString(u.Key)
			if !strings.HasPrefix(key, prefix) {
				past = key > prefix
				continue
			}
			past = false
			page = append(page, Upload{Key: key, UploadID: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)})
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return false, err
			}
		}
		return !past, ctx.Err()
	})
	if err != nil {
		return fmt.Errorf("list the multipart uploads of s3://%s/%s: %w", bucket, prefix, err)
	}
	return nil
}
