package s3call

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Code is what a failed S3 call means to s3once, whatever server said it and
// however. Callers branch on a Code (or on a predicate built on it), never on
// an S3 error string: a server's quirk is one line in CodeOf's tables.
type Code int

// The codes. Unknown is a failure that none of the others describes; it is
// terminal (asking again will not help).
const (
	// OK: no error.
	OK Code = iota
	// Unknown: a failure no other code describes.
	Unknown
	// NotFound: the object (or another resource but an upload or a
	// bucket) does not exist: NoSuchKey, NotFound, a bare 404.
	NotFound
	// NoSuchUpload: the multipart upload does not exist (aborted,
	// completed, expired).
	NoSuchUpload
	// NoSuchBucket: the bucket does not exist.
	NoSuchBucket
	// PreconditionFailed: a condition (If-None-Match, If-Match) was not
	// met: 412.
	PreconditionFailed
	// Conflict: 409, a conflicting operation (ConditionalRequestConflict,
	// OperationAborted, ...).
	Conflict
	// InvalidPart: the parts named in a completion are not the upload's
	// (InvalidPart, InvalidPartOrder, BadDigest, InvalidDigest).
	InvalidPart
	// EntityTooSmall: a part before the last is under S3's minimum size.
	EntityTooSmall
	// AccessDenied: the credentials are valid but not allowed: 403.
	AccessDenied
	// Unauthenticated: the credentials were rejected, or none were found.
	Unauthenticated
	// WrongRegion: the bucket lives in another region than the request
	// was signed for.
	WrongRegion
	// NotImplemented: the server does not implement the call or a header
	// it carries: 501.
	NotImplemented
	// Transient: the call may succeed when sent again: a server error
	// (5xx but 501), throttling, a request timeout, a call's own deadline,
	// a failed or broken connection.
	Transient
	// Canceled: the caller's context was cancelled.
	Canceled
	// InvalidBucketName: the server refuses the bucket's name.
	InvalidBucketName
	// Throttled: the server answered SlowDown for longer than the call's
	// throttle budget (ErrThrottled). Terminal: the call has waited its
	// budget already.
	Throttled
)

var codeNames = [...]string{
	OK: "OK", Unknown: "Unknown", NotFound: "NotFound", NoSuchUpload: "NoSuchUpload",
	NoSuchBucket: "NoSuchBucket", PreconditionFailed: "PreconditionFailed", Conflict: "Conflict",
	InvalidPart: "InvalidPart", EntityTooSmall: "EntityTooSmall", AccessDenied: "AccessDenied",
	Unauthenticated: "Unauthenticated", WrongRegion: "WrongRegion", NotImplemented: "NotImplemented",
	Transient: "Transient", Canceled: "Canceled", InvalidBucketName: "InvalidBucketName", Throttled: "Throttled",
}

func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// byAPICode maps the error codes servers send to Codes. It is looked at
// before the HTTP status, which is coarser.
var byAPICode = map[string]Code{
	"NoSuchKey":                    NotFound,
	"NotFound":                     NotFound,
	"NoSuchLifecycleConfiguration": NotFound,
	"NoSuchUpload":                 NoSuchUpload,
	"NoSuchBucket":                 NoSuchBucket,
	"InvalidBucketName":            InvalidBucketName,
	"PreconditionFailed":           PreconditionFailed,
	"ConditionalRequestConflict":   Conflict,
	"OperationAborted":             Conflict,
	"InvalidPart":                  InvalidPart,
	"InvalidPartOrder":             InvalidPart,
	"BadDigest":                    InvalidPart,
	"InvalidDigest":                InvalidPart,
	"EntityTooSmall":               EntityTooSmall,
	"AccessDenied":                 AccessDenied,
	"InvalidAccessKeyId":           Unauthenticated,
	"SignatureDoesNotMatch":        Unauthenticated,
	"ExpiredToken":                 Unauthenticated,
	"InvalidToken":                 Unauthenticated,
	"TokenRefreshRequired":         Unauthenticated,
	"InvalidSecurity":              Unauthenticated,
	"MissingSecurityHeader":        Unauthenticated,
	"XAdminUserNotFound":           Unauthenticated, // versitygw: an unknown access key
	"PermanentRedirect":            WrongRegion,
	"AuthorizationHeaderMalformed": WrongRegion,
	"NotImplemented":               NotImplemented,
	"SlowDown":                     Transient,
	"RequestTimeout":               Transient,
	"RequestTimeoutException":      Transient,
	"InternalError":                Transient,
	"ServiceUnavailable":           Transient,
	"Throttling":                   Transient,
	"ThrottlingException":          Transient,
	"RequestLimitExceeded":         Transient,
	"TooManyRequestsException":     Transient,
	"Busy":                         Transient,
}

// CodeOf classifies err. It is the one place that reads S3 error codes, HTTP
// statuses and transport errors; everything else asks it.
func CodeOf(err error) Code {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, ErrThrottled):
		return Throttled
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		// A call's own deadline (or the caller's: whether time is left is
		// the caller's context's to say).
		return Transient
	}
	if c, ok := byAPICode[APICode(err)]; ok {
		return c
	}
	switch st := HTTPStatus(err); {
	case st == http.StatusNotFound:
		return NotFound
	case st == http.StatusPreconditionFailed:
		return PreconditionFailed
	case st == http.StatusConflict:
		return Conflict
	case st == http.StatusForbidden:
		return AccessDenied
	case st == http.StatusMovedPermanently:
		return WrongRegion
	case st == http.StatusNotImplemented:
		return NotImplemented
	case st >= 500, st == http.StatusTooManyRequests, st == http.StatusRequestTimeout:
		return Transient
	case st != 0:
		return Unknown
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorFault() == smithy.FaultServer {
		return Transient
	}
	if brokenConnection(err) {
		return Transient
	}
	// The SDK reports a credential chain that found nothing without a type
	// of its own.
	if msg := err.Error(); strings.Contains(msg, "get credentials") || strings.Contains(msg, "failed to refresh cached credentials") {
		return Unauthenticated
	}
	return Unknown
}

// brokenConnection reports whether err says the request could not be sent or
// its reply not read: a send error, a network timeout, a reset, refused or
// closed connection, an early EOF.
func brokenConnection(err error) bool {
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// APICode returns the S3 error code of err ("NoSuchUpload", "SlowDown", ...),
// or "" when err carries none. Prefer CodeOf; this is for messages and for
// the few checks that need the server's exact word.
func APICode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// HTTPStatus returns the HTTP status of the response err came from, or 0.
func HTTPStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}

// IsNotFound reports whether err says the object, upload or bucket is absent.
func IsNotFound(err error) bool {
	switch CodeOf(err) {
	case NotFound, NoSuchUpload, NoSuchBucket:
		return true
	}
	return false
}

// IsNoSuchUpload reports whether err says the multipart upload is gone.
func IsNoSuchUpload(err error) bool { return CodeOf(err) == NoSuchUpload }

// IsPreconditionFailed reports whether err is a refused condition (412).
func IsPreconditionFailed(err error) bool { return CodeOf(err) == PreconditionFailed }

// IsConflict reports whether err is a 409 of any code.
func IsConflict(err error) bool { return CodeOf(err) == Conflict }

// IsNotImplemented reports whether err says the server does not implement the
// call or a header it carries (If-None-Match, DeleteObjects, lifecycle rules).
func IsNotImplemented(err error) bool { return CodeOf(err) == NotImplemented }

// IsRetryable reports whether a call that failed with err may succeed when
// sent again: Transient failures, and the one 409 S3 documents as passing
// (OperationAborted: another operation on the resource is in progress).
// Everything else is terminal: the request is wrong or the state it met will
// not change by asking again. A cancelled context is terminal; a deadline is
// retryable (it may be one call's own timeout) and the caller's context
// decides whether there is time left.
func IsRetryable(err error) bool {
	switch CodeOf(err) {
	case Transient:
		return true
	case Conflict:
		return APICode(err) == "OperationAborted"
	}
	return false
}

// IsUnreachable reports whether err says no connection could be made (a
// refused or failed dial, an unknown host). A connection reset halfway is not
// that.
func IsUnreachable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// IsNoReply reports whether err came without any HTTP reply (the request
// could not be sent, or its deadline passed first).
func IsNoReply(err error) bool {
	var send *smithyhttp.RequestSendError
	return errors.As(err, &send) || errors.Is(err, context.DeadlineExceeded)
}

// IsChecksumRejected reports whether err is a server refusing the checksum
// headers s3once sends.
func IsChecksumRejected(err error) bool {
	switch APICode(err) {
	case "InvalidArgument", "NotImplemented", "InvalidRequest":
		return strings.Contains(strings.ToLower(err.Error()), "checksum")
	}
	return false
}
