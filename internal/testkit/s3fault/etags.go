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

// partID names one part of one multipart upload, or, with upload empty and
// number 0, one object.
type partID struct {
	bucket, key, upload string
	number              int32
}

// partETag is the ETag the wrapper showed for a part's latest upload, and the
// one the server gave it.
type partETag struct {
	shown, real string
}

// RandomETags makes the wrapper answer as a bucket encrypted with SSE-KMS
// does: every part upload and every object write that the server carries out
// from now on (acknowledged, or applied with its reply lost or late) gets a
// fresh random ETag, not the MD5 of its bytes, so writing the same bytes again
// gives another ETag.
//
// The wrapper keeps what it showed consistent, as the server would: ListParts
// shows each part's latest ETag, and CompleteMultipartUpload accepts only
// that one, answering 400 InvalidPart for an older one, as S3 does for an
// ETag that no longer names the part; HeadObject, GetObject and ListObjectsV2
// show an object's latest ETag, and If-Match on HeadObject and GetObject takes
// it.
func (c *Client) RandomETags() {
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

func objectOf(bucket, key *string) partID {
	return partID{bucket: aws.ToString(bucket), key: aws.ToString(key)}
}

// mint records a new random ETag for id, whose real one is real, and returns it.
func (c *Client) mint(id partID, real *string) *string {
	shown := randomETag()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.etags[id] = partETag{shown: shown, real: aws.ToString(real)}
	return aws.String(shown)
}

// show returns the ETag to show for id where the server reports real.
func (c *Client) show(id partID, real *string) *string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.etags[id]; ok && trimETag(e.real) == trimETag(aws.ToString(real)) {
		return aws.String(e.shown)
	}
	return real
}

// unshow turns an ETag the wrapper showed for id back into the server's. An
// ETag it does not know (an older one, or any other) goes through as it is,
// and the server finds that it does not match.
func (c *Client) unshow(id partID, etag *string) *string {
	if etag == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.etags[id]; ok && trimETag(e.shown) == trimETag(*etag) {
		return aws.String(e.real)
	}
	return etag
}

// uploadPart sends a part and, with RandomETags, replaces its ETag.
func (c *Client) uploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	out, err := c.inner.UploadPart(ctx, in, opts...)
	if err != nil || out == nil || !c.randomETags() {
		return out, err
	}
	cp := *out
	cp.ETag = c.mint(partOf(in.Bucket, in.Key, in.UploadId, in.PartNumber), out.ETag)
	return &cp, nil
}

// listParts lists parts and, with RandomETags, shows each part's latest
// random ETag in place of the server's.
func (c *Client) listParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	out, err := c.inner.ListParts(ctx, in, opts...)
	if err != nil || out == nil || !c.randomETags() {
		return out, err
	}
	cp := *out
	cp.Parts = append([]types.Part(nil), out.Parts...)
	for i, p := range cp.Parts {
		cp.Parts[i].ETag = c.show(partOf(in.Bucket, in.Key, in.UploadId, p.PartNumber), p.ETag)
	}
	return &cp, nil
}

// completeMultipartUpload, with RandomETags, turns the random part ETags back
// into the server's, refuses one that is not the part's latest, and gives the
// object a random ETag.
func (c *Client) completeMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if !c.randomETags() {
		return c.inner.CompleteMultipartUpload(ctx, in, opts...)
	}
	cp := *in
	if in.MultipartUpload != nil {
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
	}
	out, err := c.inner.CompleteMultipartUpload(ctx, &cp, opts...)
	if err != nil || out == nil {
		return out, err
	}
	oc := *out
	oc.ETag = c.mint(objectOf(in.Bucket, in.Key), out.ETag)
	return &oc, nil
}

// putObject writes an object and, with RandomETags, replaces its ETag.
func (c *Client) putObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	out, err := c.inner.PutObject(ctx, in, opts...)
	if err != nil || out == nil || !c.randomETags() {
		return out, err
	}
	cp := *out
	cp.ETag = c.mint(objectOf(in.Bucket, in.Key), out.ETag)
	return &cp, nil
}

// headObject, with RandomETags, takes and shows the object's random ETag.
func (c *Client) headObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if !c.randomETags() {
		return c.inner.HeadObject(ctx, in, opts...)
	}
	id := objectOf(in.Bucket, in.Key)
	cp := *in
	cp.IfMatch = c.unshow(id, in.IfMatch)
	out, err := c.inner.HeadObject(ctx, &cp, opts...)
	if err != nil || out == nil {
		return out, err
	}
	oc := *out
	oc.ETag = c.show(id, out.ETag)
	return &oc, nil
}

// getObject, with RandomETags, takes and shows the object's random ETag.
func (c *Client) getObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if !c.randomETags() {
		return c.inner.GetObject(ctx, in, opts...)
	}
	id := objectOf(in.Bucket, in.Key)
	cp := *in
	cp.IfMatch = c.unshow(id, in.IfMatch)
	out, err := c.inner.GetObject(ctx, &cp, opts...)
	if err != nil || out == nil {
		return out, err
	}
	oc := *out
	oc.ETag = c.show(id, out.ETag)
	return &oc, nil
}

// listObjectsV2, with RandomETags, shows each object's random ETag.
func (c *Client) listObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	out, err := c.inner.ListObjectsV2(ctx, in, opts...)
	if err != nil || out == nil || !c.randomETags() {
		return out, err
	}
	cp := *out
	cp.Contents = append([]types.Object(nil), out.Contents...)
	for i, o := range cp.Contents {
		cp.Contents[i].ETag = c.show(objectOf(in.Bucket, o.Key), o.ETag)
	}
	return &cp, nil
}
