package recoverable

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3 is the part of the S3 API a Writer uses. *s3.Client satisfies it; tests wrap
// it to inject faults.
type S3 interface {
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ S3 = (*s3.Client)(nil)

// ErrorCode returns the S3 error code of err ("NoSuchUpload", "SlowDown", ...),
// or "" when err carries none.
func ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// StatusCode returns the HTTP status of the response err came from, or 0.
func StatusCode(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}

// IsNotFound reports whether err says the object, upload or bucket is absent.
func IsNotFound(err error) bool {
	switch ErrorCode(err) {
	case "NoSuchKey", "NotFound", "NoSuchUpload", "NoSuchBucket":
		return true
	}
	return StatusCode(err) == http.StatusNotFound
}

// IsNoSuchUpload reports whether err says the multipart upload is gone.
func IsNoSuchUpload(err error) bool { return ErrorCode(err) == "NoSuchUpload" }
