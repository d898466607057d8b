package s3call

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Defaults shared by every package that calls S3.
const (
	// BaseCallTimeout is the bound of one attempt of a call that carries
	// no large body.
	BaseCallTimeout = 30 * time.Second
	// DefaultCleanupTimeout bounds the clean-up that runs after a failure
	// or after the outcome is known, on a context detached from the
	// caller's (see Detached).
	DefaultCleanupTimeout = 30 * time.Second
	// TimeoutAttempts is how many times a stream makes a call whose
	// attempts time out, in all.
	TimeoutAttempts = 3
)

// CallTimeout is the default bound of one attempt of a call that carries up
// to body bytes: BaseCallTimeout plus the time to move the body at 1 MiB/s.
func CallTimeout(body int64) time.Duration {
	return BaseCallTimeout + time.Duration(body>>20)*time.Second
}

// ErrCallTimeout: an S3 call got no answer within its Policy's CallTimeout,
// on every attempt.
var ErrCallTimeout = errors.New("S3 call timed out")

// Retry says which failures a Policy makes another attempt after.
type Retry int

const (
	// RetryTimeouts retries only attempts that got no answer within
	// CallTimeout (a stalled connection, which the SDK's retryer cannot
	// end). Everything else the SDK's retryer has already retried.
	RetryTimeouts Retry = iota
	// RetryTransient retries those and every failure IsRetryable reports,
	// with backoff: for callers whose protocol settles any unknown outcome
	// (the committer looks at the key), so that an outage longer than the
	// SDK's budget costs a wait, not a failure.
	RetryTransient
)

// Policy is how one S3 call is bounded and retried, on top of the SDK
// client's own retryer (which retries transport errors, 5xx and throttling
// inside each attempt). The zero value makes one attempt without a bound.
type Policy struct {
	// CallTimeout bounds one attempt; zero or negative means none (the
	// caller's context alone).
	CallTimeout time.Duration
	// Attempts is how many times the call is made in all; below 1 means 1.
	Attempts int
	// Retry says what is retried.
	Retry Retry
	// BaseBackoff and MaxBackoff shape the wait before attempt n+1: a
	// random time in [d/2, d] where d = min(MaxBackoff, BaseBackoff x
	// 2^(n-1)). Zero means no wait.
	BaseBackoff, MaxBackoff time.Duration
}

// WorstCase is the longest a call made under p can take, SDK retries
// included (they run inside each attempt's bound): every attempt times out
// and every wait between them is the longest. Zero when CallTimeout is
// unbounded (the caller's context is then the bound).
func (p Policy) WorstCase() time.Duration {
	if p.CallTimeout <= 0 {
		return 0
	}
	n := max(p.Attempts, 1)
	d := time.Duration(n) * p.CallTimeout
	for i := 1; i < n; i++ {
		d += p.backoffCap(i)
	}
	return d
}

// backoffCap is the longest wait before attempt n+1.
func (p Policy) backoffCap(n int) time.Duration {
	d := p.BaseBackoff
	if d <= 0 {
		return 0
	}
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, max(p.MaxBackoff, p.BaseBackoff))
}

// Backoff returns the wait before attempt n+1 (n counts from 1), jittered
// unless ctx comes from WithoutJitter.
func (p Policy) Backoff(ctx context.Context, n int) time.Duration {
	d := p.backoffCap(n)
	if d <= 1 || ctx.Value(noJitterKey{}) != nil {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

type noJitterKey struct{}

// WithoutJitter returns a context under which every Policy waits the
// longest backoff, without jitter: for a caller that must replay a run
// exactly (the crash explorer, whose bounded polls in fake time would
// otherwise vary from run to run). Production code never uses it: jitter
// keeps clients that failed together from retrying together.
func WithoutJitter(ctx context.Context) context.Context {
	return context.WithValue(ctx, noJitterKey{}, true)
}

// Do runs fn under p: each attempt under its own CallTimeout, again after a
// failure p retries while ctx lasts, up to p.Attempts in all. Errors are
// prefixed with what (when not empty); an attempt that timed out on the last
// try gives an error wrapping ErrCallTimeout. fn must finish all use of the
// attempt's context (reading a body included) before it returns; every call
// made through Do must be safe to make again (the same bytes to the same key
// or part, a read, or an outcome its caller checks).
//
// A throttling answer (SlowDown) from a client NewClient built is not an
// attempt: Do sends the call again after its lane's backoff (see Throttle),
// until the call has been throttled for the client's budget; then it fails
// with a *ThrottledError.
func Do[T any](ctx context.Context, p Policy, what string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	var throttled throttledCall
	if !mutNoThrottleBackoff() {
		ctx = context.WithValue(ctx, underPolicyKey{}, true)
	}
	for n := 1; ; n++ {
		out, err, timedOut := attempt(ctx, p.CallTimeout, fn)
		if err == nil {
			return out, nil
		}
		if again, final := throttled.note(err); final != nil {
			return zero, annotate(what, final)
		} else if again && ctx.Err() == nil {
			n--
			continue
		}
		retry := ctx.Err() == nil && (timedOut || p.Retry == RetryTransient && IsRetryable(err))
		if !retry {
			return out, annotate(what, err)
		}
		if n >= max(p.Attempts, 1) {
			if timedOut {
				return zero, annotate(what, fmt.Errorf("%w: no answer within %v, %d times: %w", ErrCallTimeout, p.CallTimeout, n, err))
			}
			return zero, annotate(what, fmt.Errorf("giving up after %d attempts: %w", n, err))
		}
		if serr := Sleep(ctx, p.Backoff(ctx, n)); serr != nil {
			return zero, annotate(what, fmt.Errorf("%w (while waiting to retry after: %w)", serr, err))
		}
	}
}

// attempt runs fn once under timeout d (none when d <= 0) and says whether
// it failed because d ran out while ctx was live.
func attempt[T any](ctx context.Context, d time.Duration, fn func(context.Context) (T, error)) (T, error, bool) {
	if d <= 0 {
		out, err := fn(ctx)
		return out, err, false
	}
	actx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	out, err := fn(actx)
	return out, err, err != nil && actx.Err() != nil && ctx.Err() == nil
}

func annotate(what string, err error) error {
	if what == "" {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Sleep waits for d, or until ctx is done (then it returns ctx's cause).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// Detached returns a context for clean-up after a failure or after the
// outcome is known: it keeps ctx's values, ignores its cancellation, and ends
// after d (DefaultCleanupTimeout when d <= 0).
func Detached(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		d = DefaultCleanupTimeout
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
