// Package s3fault wraps an S3 client and injects faults into its calls, for
// tests. A Client is created per test around a real client (usually one from
// internal/testkit/s3test); hooks decide, call by call, whether a call fails and how,
// and every call is logged.
//
// The injected errors look like the SDK's own, so the code under test
// classifies them the way it would classify real ones:
//
//   - BeforeSend: the request never left (connection refused); the server saw
//     nothing.
//   - LostResponse: the server applied the request, then the connection was
//     reset before the reply arrived.
//   - SlowDown: the server refused the request with 503 SlowDown; nothing was
//     applied.
//   - Timeout: the server applied the request, but the reply came after the
//     caller's deadline (context.DeadlineExceeded).
//
// LostResponse and Timeout are the nasty ones: the caller cannot tell whether
// its request took effect. Late is nastier still:
//
//   - Late: the caller gets LostResponse's error at once, but the request is
//     held back (with a copy of its body) and reaches the server only when the
//     test calls ApplyLate: a stalled request that lands after its caller gave
//     up, retried, and moved on.
//
// RandomETags makes the wrapper answer like a bucket encrypted with SSE-KMS:
// every part upload and object write the server carries out gets a fresh
// random ETag, even for bytes it saw before, so an ETag names one write, not
// its content.
package s3fault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// API is every S3 operation the project's packages call. *s3.Client satisfies
// it, and so does *Client, so a Client can stand in for any narrower interface
// (recoverable.S3, committer.S3).
type API interface {
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, opts ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetBucketLifecycleConfiguration(ctx context.Context, in *s3.GetBucketLifecycleConfigurationInput, opts ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error)
}

var _ API = (*s3.Client)(nil)
var _ API = (*Client)(nil)

// Op names an S3 operation.
type Op string

// The operations a Client wraps.
const (
	CreateMultipartUpload           Op = "CreateMultipartUpload"
	UploadPart                      Op = "UploadPart"
	ListParts                       Op = "ListParts"
	AbortMultipartUpload            Op = "AbortMultipartUpload"
	CompleteMultipartUpload         Op = "CompleteMultipartUpload"
	ListMultipartUploads            Op = "ListMultipartUploads"
	PutObject                       Op = "PutObject"
	GetObject                       Op = "GetObject"
	HeadObject                      Op = "HeadObject"
	DeleteObject                    Op = "DeleteObject"
	DeleteObjects                   Op = "DeleteObjects"
	ListObjectsV2                   Op = "ListObjectsV2"
	GetBucketLifecycleConfiguration Op = "GetBucketLifecycleConfiguration"
)

// Ops lists every operation a Client wraps.
var Ops = []Op{
	CreateMultipartUpload, UploadPart, ListParts, AbortMultipartUpload,
	CompleteMultipartUpload, ListMultipartUploads, PutObject, GetObject,
	HeadObject, DeleteObject, DeleteObjects, ListObjectsV2,
	GetBucketLifecycleConfiguration,
}

// Kind is a kind of fault.
type Kind int

// The faults a hook can ask for. None lets the call through untouched.
const (
	None Kind = iota
	BeforeSend
	LostResponse
	SlowDown
	Timeout
	Late
)

// Kinds lists every fault (not None) whose effect on the server is settled
// when the call returns. Late is not among them: what it does depends on when
// the test calls ApplyLate.
var Kinds = []Kind{BeforeSend, LostResponse, SlowDown, Timeout}

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case BeforeSend:
		return "before-send"
	case LostResponse:
		return "lost-response"
	case SlowDown:
		return "slowdown"
	case Timeout:
		return "timeout"
	case Late:
		return "late"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Applied reports whether the server carries out a request that fails with k.
// For Late it does, but only once ApplyLate is called.
func (k Kind) Applied() bool { return k == None || k == LostResponse || k == Timeout || k == Late }

// Call is one call through a Client, as hooks see it and as the log keeps it.
type Call struct {
	// Seq numbers every call of the Client from 1, in the order they started.
	Seq int
	// N numbers the calls of this operation from 1.
	N  int
	Op Op
	// Bucket and Key are taken from the input (Key is empty for bucket-level
	// calls and for DeleteObjects).
	Bucket, Key string
	// Input is the call's *s3.XxxInput.
	Input any
	// Fault is what the hooks chose.
	Fault Kind
	// Err is what the call returned (the injected error, the server's, or nil).
	// It is set in the log once the call returns.
	Err error
}

// Hook chooses the fault for a call; None lets it through.
type Hook func(Call) Kind

// Nth fails the n-th call (counted per operation, from 1) with k.
func Nth(n int, k Kind) Hook {
	return func(c Call) Kind {
		if c.N == n {
			return k
		}
		return None
	}
}

// FirstN fails the first n calls of the operation with k.
func FirstN(n int, k Kind) Hook {
	return func(c Call) Kind {
		if c.N <= n {
			return k
		}
		return None
	}
}

// Always fails every call with k.
func Always(k Kind) Hook { return func(Call) Kind { return k } }

// AtSeq fails the call numbered seq across all operations with k; use it with
// OnAny.
func AtSeq(seq int, k Kind) Hook {
	return func(c Call) Kind {
		if c.Seq == seq {
			return k
		}
		return None
	}
}

// Client wraps an API and injects faults. Its methods are safe for concurrent
// use. The zero value is not usable; call New.
type Client struct {
	inner API

	mu    sync.Mutex
	hooks map[Op][]Hook
	any   []Hook
	seq   int
	count map[Op]int
	log   []Call
	late  []func(context.Context) error // held requests, in the order they were made
	etags map[partID]partETag           // set by RandomETags
}

// New wraps inner. With no hooks, every call goes through untouched. A nil
// inner is a programming error and panics.
func New(inner API) *Client {
	if inner == nil {
		panic("s3fault: New(nil)")
	}
	return &Client{inner: inner, hooks: map[Op][]Hook{}, count: map[Op]int{}}
}

// On adds a hook for one operation. Hooks run in the order they were added;
// the first that returns a fault wins. Per-operation hooks run before OnAny's.
func (c *Client) On(op Op, h Hook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks[op] = append(c.hooks[op], h)
}

// OnAny adds a hook consulted for every operation.
func (c *Client) OnAny(h Hook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.any = append(c.any, h)
}

// ClearHooks removes every hook; the log and the counters stay.
func (c *Client) ClearHooks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = map[Op][]Hook{}
	c.any = nil
}

// Calls returns a copy of the call log, in start order.
func (c *Client) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.log...)
}

// Count returns how many calls of op started.
func (c *Client) Count(op Op) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[op]
}

// Faults returns the logged calls that had a fault injected.
func (c *Client) Faults() []Call {
	var out []Call
	for _, call := range c.Calls() {
		if call.Fault != None {
			out = append(out, call)
		}
	}
	return out
}

// begin numbers the call, asks the hooks and logs it; it returns the call and
// its index in the log.
func (c *Client) begin(op Op, bucket, key *string, in any) (Call, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.count[op]++
	call := Call{Seq: c.seq, N: c.count[op], Op: op, Input: in}
	if bucket != nil {
		call.Bucket = *bucket
	}
	if key != nil {
		call.Key = *key
	}
	for _, h := range append(append([]Hook(nil), c.hooks[op]...), c.any...) {
		if k := h(call); k != None {
			call.Fault = k
			break
		}
	}
	c.log = append(c.log, call)
	return call, len(c.log) - 1
}

func (c *Client) end(i int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log[i].Err = err
}

// Error is an injected failure. It wraps an error shaped like the SDK's, so
// errors.As finds smithy.APIError, *smithyhttp.ResponseError, net errors or
// context.DeadlineExceeded in it as it would in a real one.
type Error struct {
	Op   Op
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("s3fault: injected %s: %v", e.Kind, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// IsInjected reports whether err is (or wraps) an injected fault.
func IsInjected(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// FaultError returns the error a call of op fails with under fault k.
func FaultError(op Op, k Kind) error {
	var inner error
	switch k {
	case BeforeSend:
		inner = &smithyhttp.RequestSendError{Err: &net.OpError{
			Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
		}}
	case LostResponse, Late:
		inner = &smithyhttp.RequestSendError{Err: &net.OpError{
			Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET),
		}}
	case SlowDown:
		e := APIError(op, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.").(*Error)
		e.Kind = SlowDown
		return e
	case Timeout:
		inner = &smithyhttp.RequestSendError{Err: &url.Error{
			Op: "Do", URL: "s3fault://" + string(op), Err: context.DeadlineExceeded,
		}}
	default:
		inner = errors.New("unknown fault")
	}
	return &Error{Op: op, Kind: k, Err: &smithy.OperationError{ServiceID: "S3", OperationName: string(op), Err: inner}}
}

// APIError returns an error shaped like the server's reply with the given
// HTTP status and S3 error code, for tests that need a reply no fault Kind
// gives (409 ConditionalRequestConflict, 501 NotImplemented, ...). It is
// marked as injected; the server saw no request.
func APIError(op Op, status int, code, message string) error {
	resp := &smithyhttp.Response{Response: &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Header: http.Header{},
	}}
	fault := smithy.FaultClient
	if status >= 500 {
		fault = smithy.FaultServer
	}
	return &Error{Op: op, Kind: None, Err: &smithy.OperationError{ServiceID: "S3", OperationName: string(op), Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: resp, Err: &smithy.GenericAPIError{Code: code, Message: message, Fault: fault}},
		RequestID:     "s3fault",
	}}}
}

// do runs one call with the fault the hooks chose. closeOut releases what a
// discarded output holds (a GetObject body).
func do[I any, O any](ctx context.Context, c *Client, op Op, in I, bucket, key *string,
	call func(context.Context, I, ...func(*s3.Options)) (O, error), opts []func(*s3.Options), closeOut func(O)) (O, error) {
	fc, i := c.begin(op, bucket, key, in)
	var zero O
	switch fc.Fault {
	case None:
		out, err := call(ctx, in, opts...)
		c.end(i, err)
		return out, err
	case LostResponse, Timeout:
		out, err := call(ctx, in, opts...)
		if err == nil && closeOut != nil {
			closeOut(out)
		}
		ferr := FaultError(op, fc.Fault)
		c.end(i, ferr)
		return zero, ferr
	case Late:
		held, err := freeze(in)
		if err != nil {
			// The body could not be read: the request never left.
			c.end(i, err)
			return zero, err
		}
		c.mu.Lock()
		c.late = append(c.late, func(ctx context.Context) error {
			out, err := call(ctx, held, opts...)
			if err == nil && closeOut != nil {
				closeOut(out)
			}
			return err
		})
		c.mu.Unlock()
		ferr := FaultError(op, Late)
		c.end(i, ferr)
		return zero, ferr
	default:
		ferr := FaultError(op, fc.Fault)
		c.end(i, ferr)
		return zero, ferr
	}
}

func (c *Client) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	if in == nil {
		in = &s3.CreateMultipartUploadInput{}
	}
	return do(ctx, c, CreateMultipartUpload, in, in.Bucket, in.Key, c.inner.CreateMultipartUpload, opts, nil)
}

func (c *Client) UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if in == nil {
		in = &s3.UploadPartInput{}
	}
	return do(ctx, c, UploadPart, in, in.Bucket, in.Key, c.uploadPart, opts, nil)
}

func (c *Client) ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	if in == nil {
		in = &s3.ListPartsInput{}
	}
	return do(ctx, c, ListParts, in, in.Bucket, in.Key, c.listParts, opts, nil)
}

func (c *Client) AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	if in == nil {
		in = &s3.AbortMultipartUploadInput{}
	}
	return do(ctx, c, AbortMultipartUpload, in, in.Bucket, in.Key, c.inner.AbortMultipartUpload, opts, nil)
}

func (c *Client) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if in == nil {
		in = &s3.CompleteMultipartUploadInput{}
	}
	return do(ctx, c, CompleteMultipartUpload, in, in.Bucket, in.Key, c.completeMultipartUpload, opts, nil)
}

func (c *Client) ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, opts ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	if in == nil {
		in = &s3.ListMultipartUploadsInput{}
	}
	return do(ctx, c, ListMultipartUploads, in, in.Bucket, nil, c.inner.ListMultipartUploads, opts, nil)
}

func (c *Client) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if in == nil {
		in = &s3.PutObjectInput{}
	}
	return do(ctx, c, PutObject, in, in.Bucket, in.Key, c.putObject, opts, nil)
}

func (c *Client) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if in == nil {
		in = &s3.GetObjectInput{}
	}
	return do(ctx, c, GetObject, in, in.Bucket, in.Key, c.getObject, opts, func(o *s3.GetObjectOutput) {
		if o != nil && o.Body != nil {
			_ = o.Body.Close()
		}
	})
}

func (c *Client) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if in == nil {
		in = &s3.HeadObjectInput{}
	}
	return do(ctx, c, HeadObject, in, in.Bucket, in.Key, c.headObject, opts, nil)
}

func (c *Client) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if in == nil {
		in = &s3.DeleteObjectInput{}
	}
	return do(ctx, c, DeleteObject, in, in.Bucket, in.Key, c.inner.DeleteObject, opts, nil)
}

func (c *Client) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	if in == nil {
		in = &s3.DeleteObjectsInput{}
	}
	return do(ctx, c, DeleteObjects, in, in.Bucket, nil, c.inner.DeleteObjects, opts, nil)
}

func (c *Client) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if in == nil {
		in = &s3.ListObjectsV2Input{}
	}
	return do(ctx, c, ListObjectsV2, in, in.Bucket, nil, c.listObjectsV2, opts, nil)
}

func (c *Client) GetBucketLifecycleConfiguration(ctx context.Context, in *s3.GetBucketLifecycleConfigurationInput, opts ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error) {
	if in == nil {
		in = &s3.GetBucketLifecycleConfigurationInput{}
	}
	return do(ctx, c, GetBucketLifecycleConfiguration, in, in.Bucket, nil, c.inner.GetBucketLifecycleConfiguration, opts, nil)
}
