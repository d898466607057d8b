package s3call_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3fault"
)

// stall is a call that never gets an answer.
func stall(ctx context.Context) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestStalledCallWorstCase: a call that never answers takes exactly
// Attempts x CallTimeout, then fails with ErrCallTimeout; WorstCase, which
// the package docs' table quotes, bounds a call that keeps failing with
// transient errors and the longest backoffs.
func TestStalledCallWorstCase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := s3call.Policy{CallTimeout: 38 * time.Second, Attempts: s3call.TimeoutAttempts}
		start := time.Now()
		n := 0
		_, err := s3call.Do(context.Background(), p, "upload part 3", func(ctx context.Context) (int, error) { n++; return stall(ctx) })
		if took := time.Since(start); took != 3*38*time.Second || took != p.WorstCase() {
			t.Fatalf("stalled call took %v, WorstCase %v, want %v", took, p.WorstCase(), 3*38*time.Second)
		}
		if n != 3 || !errors.Is(err, s3call.ErrCallTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%d attempts, err %v", n, err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		p := s3call.Policy{CallTimeout: 30 * time.Second, Attempts: 6, Retry: s3call.RetryTransient, BaseBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}
		if want := 6*30*time.Second + 3100*time.Millisecond; p.WorstCase() != want {
			t.Fatalf("WorstCase %v, want %v (the docs' table)", p.WorstCase(), want)
		}
		start := time.Now()
		n := 0
		_, err := s3call.Do(context.Background(), p, "head object", func(ctx context.Context) (int, error) {
			n++
			if n%2 == 0 {
				return stall(ctx)
			}
			return 0, s3fault.FaultError(s3fault.HeadObject, s3fault.SlowDown)
		})
		if took := time.Since(start); took > p.WorstCase() || took < 3*30*time.Second {
			t.Fatalf("took %v, outside [90s, %v]", took, p.WorstCase())
		}
		if n != 6 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%d attempts, err %v", n, err)
		}
	})
}

// TestRetryKinds: RetryTimeouts leaves every failure but a timeout to the
// SDK's retryer; RetryTransient retries what IsRetryable reports; neither
// retries a terminal failure or goes on once the caller's context is done.
func TestRetryKinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := func(n *int) func(context.Context) (int, error) {
			return func(context.Context) (int, error) {
				*n++
				return 0, s3fault.FaultError(s3fault.UploadPart, s3fault.SlowDown)
			}
		}
		var n int
		if _, err := s3call.Do(context.Background(), s3call.Policy{CallTimeout: time.Second, Attempts: 3}, "x", slow(&n)); n != 1 || err == nil {
			t.Fatalf("RetryTimeouts made %d attempts after SlowDown (err %v), want 1", n, err)
		}
		n = 0
		p := s3call.Policy{CallTimeout: time.Second, Attempts: 4, Retry: s3call.RetryTransient, BaseBackoff: time.Second, MaxBackoff: time.Second}
		if _, err := s3call.Do(context.Background(), p, "x", slow(&n)); n != 4 || err == nil {
			t.Fatalf("RetryTransient made %d attempts after SlowDown (err %v), want 4", n, err)
		}
		n = 0
		_, err := s3call.Do(context.Background(), p, "x", func(context.Context) (int, error) {
			n++
			return 0, s3fault.APIError(s3fault.HeadObject, 403, "AccessDenied", "")
		})
		if n != 1 || s3call.CodeOf(err) != s3call.AccessDenied {
			t.Fatalf("terminal failure: %d attempts, err %v", n, err)
		}
		p.BaseBackoff, p.MaxBackoff = 4*time.Second, 4*time.Second // waits of 2 to 4 s
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n = 0
		start := time.Now()
		_, err = s3call.Do(ctx, p, "x", slow(&n))
		if n != 1 || time.Since(start) != time.Second || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a caller's deadline during the backoff: %d attempts after %v, err %v", n, time.Since(start), err)
		}
	})
}

func TestDetached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		cctx, ccancel := s3call.Detached(ctx, 0)
		defer ccancel()
		if cctx.Err() != nil {
			t.Fatal("a detached context ends with its caller's")
		}
		start := time.Now()
		<-cctx.Done()
		if time.Since(start) != s3call.DefaultCleanupTimeout {
			t.Fatalf("detached context lasted %v, want %v", time.Since(start), s3call.DefaultCleanupTimeout)
		}
	})
}

// TestBackoffJitter: waits are jittered within [d/2, d], and exactly d under
// WithoutJitter, so that a replayed run waits the same.
func TestBackoffJitter(t *testing.T) {
	p := s3call.Policy{BaseBackoff: 100 * time.Millisecond, MaxBackoff: 800 * time.Millisecond}
	ctx := context.Background()
	for n, d := range map[int]time.Duration{1: 100 * time.Millisecond, 3: 400 * time.Millisecond, 9: 800 * time.Millisecond} {
		seen := map[time.Duration]bool{}
		for range 64 {
			b := p.Backoff(ctx, n)
			if b < d/2 || b > d {
				t.Fatalf("Backoff(%d) = %v outside [%v, %v]", n, b, d/2, d)
			}
			seen[b] = true
		}
		if len(seen) < 2 {
			t.Errorf("Backoff(%d) is not jittered: always %v", n, d)
		}
		if b := p.Backoff(s3call.WithoutJitter(ctx), n); b != d {
			t.Errorf("Backoff(%d) without jitter = %v, want %v", n, b, d)
		}
	}
}
