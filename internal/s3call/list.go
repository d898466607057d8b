package s3call

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The listings page through the SDK's paginators; each page is one call
// under the Policy (a page that times out is asked for again, from the same
// marker). fn sees every page in order and returns false to stop early.
// StopOnDuplicateToken is on, so a server that hands back the marker it was
// given ends the listing instead of looping.

// PartsAPI lists the parts of an upload.
type PartsAPI = s3.ListPartsAPIClient

// ObjectsAPI lists objects.
type ObjectsAPI = s3.ListObjectsV2APIClient

// UploadsAPI lists multipart uploads.
type UploadsAPI = s3.ListMultipartUploadsAPIClient

// ListParts calls fn with every page of the upload's parts that in selects
// (in.PartNumberMarker is where it starts; in.MaxParts is ignored).
func ListParts(ctx context.Context, api PartsAPI, p Policy, in *s3.ListPartsInput, fn func(*s3.ListPartsOutput) (more bool, err error)) error {
	return pages(ctx, s3.NewListPartsPaginator(policied{p: p, parts: api}, in, func(o *s3.ListPartsPaginatorOptions) {
		o.Limit = 0
		o.StopOnDuplicateToken = true
	}), fn, nil)
}

// ListObjects calls fn with every page of the objects that in selects.
func ListObjects(ctx context.Context, api ObjectsAPI, p Policy, in *s3.ListObjectsV2Input, fn func(*s3.ListObjectsV2Output) (more bool, err error)) error {
	return pages(ctx, s3.NewListObjectsV2Paginator(policied{p: p, objects: api}, in, func(o *s3.ListObjectsV2PaginatorOptions) {
		o.StopOnDuplicateToken = true
	}), fn, nil)
}

// ListUploads calls fn with every page of the multipart uploads that in
// selects (from in.KeyMarker and in.UploadIdMarker on). A truncated page
// that names no marker to go on from ends the listing: asking again without
// one would start over.
func ListUploads(ctx context.Context, api UploadsAPI, p Policy, in *s3.ListMultipartUploadsInput, fn func(*s3.ListMultipartUploadsOutput) (more bool, err error)) error {
	return pages(ctx, s3.NewListMultipartUploadsPaginator(policied{p: p, uploads: api}, in, func(o *s3.ListMultipartUploadsPaginatorOptions) {
		o.StopOnDuplicateToken = true
	}), fn, func(out *s3.ListMultipartUploadsOutput) bool {
		return aws.ToString(out.NextKeyMarker) == "" && aws.ToString(out.NextUploadIdMarker) == ""
	})
}

// paginator is what the SDK's paginators have in common.
type paginator[O any] interface {
	HasMorePages() bool
	NextPage(ctx context.Context, optFns ...func(*s3.Options)) (O, error)
}

// pages hands every page of pg to fn, until fn says no more, or last (when
// given) says a page is the last.
func pages[O any](ctx context.Context, pg paginator[O], fn func(O) (bool, error), last func(O) bool) error {
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctx)
		if err != nil {
			return err
		}
		if more, err := fn(out); err != nil || !more {
			return err
		}
		if last != nil && last(out) {
			return nil
		}
	}
	return nil
}

// policied makes each listing call under a Policy, for the paginators.
type policied struct {
	p       Policy
	parts   PartsAPI
	objects ObjectsAPI
	uploads UploadsAPI
}

func (c policied) ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	return Do(ctx, c.p, "", func(ctx context.Context) (*s3.ListPartsOutput, error) { return c.parts.ListParts(ctx, in, opts...) })
}

func (c policied) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return Do(ctx, c.p, "", func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
		return c.objects.ListObjectsV2(ctx, in, opts...)
	})
}

func (c policied) ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, opts ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	return Do(ctx, c.p, "", func(ctx context.Context) (*s3.ListMultipartUploadsOutput, error) {
		return c.uploads.ListMultipartUploads(ctx, in, opts...)
	})
}
