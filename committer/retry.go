package committer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/s3once/s3once/recoverable"
)

// IsRetryable reports whether an S3 call that failed with err may succeed when
// sent again: server errors (5xx but 501), throttling (SlowDown, 429, ...),
// request timeouts, and connection failures (refused, reset, EOF, send
// errors). Everything else is terminal: the request is wrong or the state it
// met will not change by asking again. A cancelled context is terminal; a
// deadline is retryable here (it may be one call's own timeout) and the
// caller's context decides whether there is time left.
//
// Retrying is safe for every call the committer makes: the commit protocol
// checks the key after any failure whose outcome is unknown.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch recoverable.ErrorCode(err) {
	case "SlowDown", "RequestTimeout", "RequestTimeoutException", "InternalError",
		"ServiceUnavailable", "Throttling", "ThrottlingException", "RequestLimitExceeded",
		"TooManyRequestsException", "Busy", "OperationAborted":
		return true
	case "NotImplemented":
		return false
	}
	switch st := recoverable.StatusCode(err); {
	case st == http.StatusNotImplemented:
		return false
	case st >= 500, st == http.StatusTooManyRequests, st == http.StatusRequestTimeout:
		return true
	case st != 0:
		return false
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorFault() == smithy.FaultServer {
		return true
	}
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

// backoff returns the wait before attempt n+1 (n counts from 1): a random time
// in [d/2, d] where d = min(max, base x 2^(n-1)).
func (c *Committer) backoff(n int) time.Duration {
	d := c.opts.BaseBackoff
	for i := 1; i < n && d < c.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.opts.MaxBackoff)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits for the backoff of attempt n, or until ctx is done.
func (c *Committer) sleep(ctx context.Context, n int) error {
	t := time.NewTimer(c.backoff(n))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// call runs fn with retries: up to MaxAttempts tries, each bounded by
// CallTimeout, with backoff between them, while ctx lasts. It returns the last
// error, annotated with what (when not empty).
func call[O any](ctx context.Context, c *Committer, what string, fn func(context.Context) (O, error)) (O, error) {
	var zero O
	for n := 1; ; n++ {
		out, err := once(ctx, c, fn)
		if err == nil {
			return out, nil
		}
		if !IsRetryable(err) || ctx.Err() != nil {
			return zero, annotate(what, err)
		}
		if n >= c.opts.MaxAttempts {
			return zero, annotate(what, fmt.Errorf("giving up after %d attempts: %w", n, err))
		}
		if serr := c.sleep(ctx, n); serr != nil {
			return zero, annotate(what, fmt.Errorf("%w (while waiting to retry after: %w)", serr, err))
		}
	}
}

// annotate prefixes err with what was being done, if anything is said.
func annotate(what string, err error) error {
	if what == "" {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// once runs fn a single time under the per-call timeout.
func once[O any](ctx context.Context, c *Committer, fn func(context.Context) (O, error)) (O, error) {
	return within(ctx, c.opts.CallTimeout, fn)
}

// within runs fn under timeout d (none when d <= 0).
func within[O any](ctx context.Context, d time.Duration, fn func(context.Context) (O, error)) (O, error) {
	if d <= 0 {
		return fn(ctx)
	}
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return fn(cctx)
}

// sleepUntil waits until t, or until ctx is done.
func (c *Committer) sleepUntil(ctx context.Context, t time.Time) error {
	tm := time.NewTimer(time.Until(t))
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-tm.C:
		return nil
	}
}
