package s3fault

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// partID names one part of one multipart upload.
type partID struct {
	bucket, key, upload string
	number              int32
}

// partETag is the ETag the wrapper showed for a part's latest upload, and the
// one the server gave it.
type partETag struct {
	shown, real string
}

// RandomPartETags makes every part upload the server carries out from now on
// (acknowledged, or applied with its reply lost or late) get a fresh random
// ETag, the way SSE-KMS buckets answer: uploading the same bytes again gives
// the part another ETag. ListParts shows each part's latest ETag, and
// CompleteMultipartUpload accepts only that one, answering 400 InvalidPart for
// an older one, as S3 does for an ETag that no longer names the part. Other
// ETags (PutObject's, the completed object's) are left as the server gives
// them.
func (c *Client) RandomPartETags() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etags == nil {
		c.etags = map[partID]partETag{}
	}
}

func (c *Client) randomETags() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.etags != nil
}

func randomETag() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return `"` + hex.EncodeToString(b[:]) + `"`
}

func trimETag(s string) string { return strings.Trim(s, `"`) }

func partOf(bucket, key, upload *string, number *int32) partID {
	return partID{aws.ToString(bucket), aws.ToString(key), aws.ToString(upload), aws.ToInt32(number)}
}

// uploadPart sends a part and, with RandomPartETags, replaces its ETag.
func (c *Client) uploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	out, err := c.inner.UploadPart(ctx, in, opts...)
	if err != nil || out == nil || !c.randomETags() {
		return out, err
	}
	shown := randomETag()
	c.mu.Lock()
	c.etags[partOf(in.Bucket, in.Key, in.UploadId, in.PartNumber)] = partETag{shown: shown, real: aws.ToString(out.ETag)}
	c.mu.Unlock()
	cp := *out
	cp.ETag = aws.String(shown)
	return &cp, nil
}

// listParts lists parts and, with RandomPartETags, shows each part's latest
// random ETag in place of the server's.
func (c *Client) listParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	out, err := c.inner.ListParts(ctx, in, opts...)
	if err != nil || out == nil || !c.randomETags() {
		return out, err
	}
	cp := *out
	cp.Parts = append([]types.Part(nil), out.Parts...)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range cp.Parts {
		e, ok := c.etags[partOf(in.Bucket, in.Key, in.UploadId, p.PartNumber)]
		if ok && trimETag(e.real) == trimETag(aws.ToString(p.ETag)) {
			cp.Parts[i].ETag = aws.String(e.shown)
		}
	}
	return &cp, nil
}

// completeMultipartUpload, with RandomPartETags, turns the random ETags back
// into the server's, and refuses one that is not the part's latest.
func (c *Client) completeMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if !c.randomETags() || in.MultipartUpload == nil {
		return c.inner.CompleteMultipartUpload(ctx, in, opts...)
	}
	cp := *in
	mu := *in.MultipartUpload
	mu.Parts = append([]types.CompletedPart(nil), in.MultipartUpload.Parts...)
	cp.MultipartUpload = &mu
	c.mu.Lock()
	for i, p := range mu.Parts {
		e, ok := c.etags[partOf(in.Bucket, in.Key, in.UploadId, p.PartNumber)]
		if !ok {
			continue // uploaded around the wrapper: the server judges it
		}
		if trimETag(aws.ToString(p.ETag)) != trimETag(e.shown) {
			c.mu.Unlock()
			return nil, APIError(CompleteMultipartUpload, http.StatusBadRequest, "InvalidPart",
				"One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
		}
		mu.Parts[i].ETag = aws.String(e.real)
	}
	c.mu.Unlock()
	return c.inner.CompleteMultipartUpload(ctx, &cp, opts...)
}
