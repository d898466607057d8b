// Package s3bucket is the one place the project's general bucket operations
// live: what a key holds (a HEAD, and a read-back where the server keeps no
// full-object CRC64NVME), small objects read whole and written once,
// listings of objects and of open multipart uploads, and deletes in bulk.
// The committer's commit protocol and sweep, the sink's barrier, markers
// and manifests, and s3once verify share its Client.
//
// Every call runs under an s3call.Policy (each attempt bounded, attempts
// retried when s3call's error table calls the failure transient); with
// MaxAttempts 1 each call is one attempt, as a preflight's probes are.
package s3bucket

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
)

// API is the part of the S3 API a Client calls. *s3.Client satisfies it,
// and so does every interface of the project's public constructors that
// reaches a bucket through a Client (committer.S3 among them).
type API interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, opts ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

var _ API = (*s3.Client)(nil)

// Defaults of Options' zero values (the committer's, which it takes from
// here).
const (
	DefaultMaxAttempts = 6
	DefaultMaxRounds   = 6
	DefaultBaseBackoff = 100 * time.Millisecond
	DefaultMaxBackoff  = 5 * time.Second
	DefaultCallTimeout = s3call.BaseCallTimeout
)

// Options shape a Client's calls; the zero value of each field means its
// default. They are the committer's options of the same names
// (committer.Options documents them); a caller that shares a bucket with a
// committer passes the same values.
type Options struct {
	// MaxAttempts is how often one call is tried when it fails in a way
	// worth retrying, a read-back's streamed GET included.
	MaxAttempts int
	// MaxRounds bounds the looks at a key whose object was replaced while
	// it was being read back.
	MaxRounds int
	// BaseBackoff and MaxBackoff shape the jittered wait between attempts.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// CallTimeout bounds each call (negative: no bound).
	CallTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = DefaultMaxRounds
	}
	if o.BaseBackoff == 0 {
		o.BaseBackoff = DefaultBaseBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	return o
}

// Policy is how each call is bounded and retried: within CallTimeout an
// attempt, up to MaxAttempts attempts after any failure s3call.IsRetryable
// reports (safe for every call made here: each reads, writes only where the
// key is empty, or deletes), with jittered exponential backoff between them.
func (o Options) Policy() s3call.Policy {
	return s3call.Policy{
		CallTimeout: o.CallTimeout, Attempts: o.MaxAttempts, Retry: s3call.RetryTransient,
		BaseBackoff: o.BaseBackoff, MaxBackoff: o.MaxBackoff,
	}
}

// Client makes the general bucket operations over an API. It is safe for
// concurrent use and holds no state but its options.
type Client struct {
	api API
	o   Options
}

// New returns a Client over api; zero options take their defaults. The
// options are the caller's to check (committer.New does).
func New(api API, o Options) *Client {
	return &Client{api: api, o: o.withDefaults()}
}

// call runs fn under the client's policy, its errors annotated with what.
func call[O any](ctx context.Context, c *Client, what string, fn func(context.Context) (O, error)) (O, error) {
	return s3call.Do(ctx, c.o.Policy(), what, fn)
}

// sleep waits for the backoff of attempt n, or until ctx is done.
func (c *Client) sleep(ctx context.Context, n int) error {
	return s3call.Sleep(ctx, c.o.Policy().Backoff(ctx, n))
}

// Options returns the client's options with defaults filled in.
func (c *Client) Options() Options { return c.o }
