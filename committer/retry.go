package committer

import (
	"context"
	"time"

	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
)

// policy is how the committer bounds and retries each S3 call: within
// CallTimeout an attempt, up to MaxAttempts attempts after any failure
// s3call.IsRetryable reports (retrying is safe for every call the committer
// makes: the commit protocol checks the key after any failure whose outcome
// is unknown), with jittered exponential backoff between them. It
// is read from the options on every call.
func (c *Committer) policy() s3call.Policy {
	return c.opts.bucketOptions().Policy()
}

// bucketOptions are the options of the committer's s3bucket.Client: the same
// attempts, rounds, backoff and call bound.
func (o Options) bucketOptions() s3bucket.Options {
	return s3bucket.Options{
		MaxAttempts: o.MaxAttempts, MaxRounds: o.MaxRounds,
		BaseBackoff: o.BaseBackoff, MaxBackoff: o.MaxBackoff, CallTimeout: o.CallTimeout,
	}
}

// backoff returns the wait before attempt n+1 (n counts from 1): a random time
// in [d/2, d] where d = min(max, base x 2^(n-1)).
func (c *Committer) backoff(ctx context.Context, n int) time.Duration {
	return c.policy().Backoff(ctx, n)
}

// sleep waits for the backoff of attempt n, or until ctx is done.
func (c *Committer) sleep(ctx context.Context, n int) error {
	return s3call.Sleep(ctx, c.backoff(ctx, n))
}

// call runs fn under the committer's policy, its errors annotated with what
// (when not empty).
func call[O any](ctx context.Context, c *Committer, what string, fn func(context.Context) (O, error)) (O, error) {
	return s3call.Do(ctx, c.policy(), what, fn)
}

// within runs fn once under timeout d (none when d <= 0).
func within[O any](ctx context.Context, d time.Duration, fn func(context.Context) (O, error)) (O, error) {
	return s3call.Do(ctx, s3call.Policy{CallTimeout: d, Attempts: 1}, "", fn)
}

// sleepUntil waits until t, or until ctx is done.
func (c *Committer) sleepUntil(ctx context.Context, t time.Time) error {
	return s3call.Sleep(ctx, time.Until(t))
}
