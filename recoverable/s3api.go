package recoverable

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
)

// S3 is the part of the S3 API a Writer uses. *s3.Client satisfies it; tests
// wrap it to inject faults.
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

// ErrCallTimeout: an S3 call got no answer within Options.CallTimeout, on every
// attempt.
var ErrCallTimeout = s3call.ErrCallTimeout

// policy is how the stream bounds and retries its calls: each attempt within
// CallTimeout, and an attempt that got no answer made again, three times in
// all. Other failures the SDK client's retryer has already retried.
func (o Options) policy() s3call.Policy {
	return s3call.Policy{CallTimeout: o.CallTimeout, Attempts: s3call.TimeoutAttempts, Retry: s3call.RetryTimeouts}
}

// ErrThrottled: S3 answered a call SlowDown for longer than its throttle
// budget (sink.Config.ThrottleBudget). Nothing a token references is lost;
// the work can be resumed once fewer requests reach the prefix.
var ErrThrottled = s3call.ErrThrottled
