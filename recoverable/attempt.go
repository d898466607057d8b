package recoverable

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// timeoutAttempts is how many times a call whose attempt timed out is made in
// all. Only timeouts are retried here: the S3 client's retryer already retries
// the other transient failures inside each attempt, but it cannot end an
// attempt that never gets an answer (a stalled connection).
const timeoutAttempts = 3

// callTimeout is the default bound of one attempt of one S3 call: 30 seconds
// plus the time to move a part at 1 MiB/s.
func callTimeout(partSize int64) time.Duration {
	return 30*time.Second + time.Duration(partSize>>20)*time.Second
}

// ErrCallTimeout: an S3 call got no answer within Options.CallTimeout, on every
// attempt.
var ErrCallTimeout = errors.New("S3 call timed out")

// attempt runs fn under the per-attempt timeout and runs it again when an
// attempt timed out while ctx is still live. Every call made this way is
// idempotent for the stream: the same part number or key with the same bytes,
// or a read. fn must finish all use of the attempt's context (reading a body
// included) before it returns.
func attempt[T any](ctx context.Context, timeout time.Duration, what string, fn func(context.Context) (T, error)) (T, error) {
	for i := 1; ; i++ {
		actx, cancel := context.WithTimeout(ctx, timeout)
		out, err := fn(actx)
		timedOut := err != nil && actx.Err() != nil && ctx.Err() == nil
		cancel()
		if !timedOut {
			return out, err
		}
		if i == timeoutAttempts {
			return out, fmt.Errorf("%s: %w: no answer within %v, %d times: %w", what, ErrCallTimeout, timeout, i, err)
		}
	}
}
