package committer

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/internal/testkit/s3fault"
)

func TestBackoffIsJitteredAndBounded(t *testing.T) {
	c, err := New(s3.New(s3.Options{}), Options{BaseBackoff: 10 * time.Millisecond, MaxBackoff: 80 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 20; n++ {
		d := min(10*time.Millisecond<<(n-1), 80*time.Millisecond)
		if n > 10 {
			d = 80 * time.Millisecond
		}
		seen := map[time.Duration]bool{}
		for i := 0; i < 50; i++ {
			b := c.backoff(context.Background(), n)
			if b < d/2 || b > d {
				t.Fatalf("backoff(%d) = %v outside [%v, %v]", n, b, d/2, d)
			}
			seen[b] = true
		}
		if len(seen) < 2 {
			t.Fatalf("backoff(%d) has no jitter", n)
		}
	}
	// A done context ends the wait at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.opts.BaseBackoff, c.opts.MaxBackoff = time.Hour, time.Hour
	if err := c.sleep(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep under a cancelled context: %v", err)
	}
}

func TestCallRetriesOnlyWhatIsRetryable(t *testing.T) {
	c, err := New(s3.New(s3.Options{}), Options{MaxAttempts: 4, MaxRounds: 4, BaseBackoff: time.Microsecond, MaxBackoff: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	_, err = call(ctx, c, "x", func(context.Context) (int, error) {
		n++
		return 0, s3fault.FaultError(s3fault.HeadObject, s3fault.SlowDown)
	})
	if n != 4 || err == nil {
		t.Fatalf("retryable: %d attempts, err %v", n, err)
	}
	n = 0
	_, err = call(ctx, c, "x", func(context.Context) (int, error) {
		n++
		return 0, s3fault.APIError(s3fault.HeadObject, 403, "AccessDenied", "")
	})
	if n != 1 || err == nil {
		t.Fatalf("terminal: %d attempts, err %v", n, err)
	}
	n = 0
	got, err := call(ctx, c, "x", func(context.Context) (int, error) {
		n++
		if n < 3 {
			return 0, io.ErrUnexpectedEOF
		}
		return 7, nil
	})
	if got != 7 || err != nil || n != 3 {
		t.Fatalf("recovering: %d after %d attempts, err %v", got, n, err)
	}
	// Each attempt is bounded by CallTimeout, and a timed-out attempt is retried.
	c.opts.CallTimeout = time.Millisecond
	n = 0
	_, err = call(ctx, c, "x", func(ctx context.Context) (int, error) {
		n++
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if n != 4 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeouts: %d attempts, err %v", n, err)
	}
}
