package s3call

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

var slowDownErr = &smithy.GenericAPIError{Code: "SlowDown", Message: "Please reduce your request rate."}

// The retryer of NewClient's clients has no retry quota: far more
// throttled retries than the SDK's default quota of 500 tokens allows (5
// each) are all granted, and so are other retries (14 each).
func TestRetryerHasNoQuota(t *testing.T) {
	r := newRetryer(3).(interface {
		GetRetryToken(context.Context, error) (func(error) error, error)
	})
	for i := range 1000 {
		if _, err := r.GetRetryToken(context.Background(), slowDownErr); err != nil {
			t.Fatalf("throttled retry %d refused: %v", i+1, err)
		}
		if _, err := r.GetRetryToken(context.Background(), errors.New("connection reset")); err != nil {
			t.Fatalf("retry %d refused: %v", i+1, err)
		}
	}
}

// A throttling answer under a Policy is not the SDK's to retry; outside a
// Policy it is.
func TestRetryerLeavesPolicyThrottlingToDo(t *testing.T) {
	r := newRetryer(3)
	if r.IsErrorRetryable(&throttleAnswer{err: slowDownErr}) {
		t.Error("the SDK would retry a throttling answer that Do handles")
	}
	if !r.IsErrorRetryable(slowDownErr) {
		t.Error("the SDK would not retry a throttling answer outside a Policy")
	}
	if r.MaxAttempts() != 3 || newRetryer(0).MaxAttempts() != retry.DefaultMaxAttempts {
		t.Errorf("attempts %d and %d, want 3 and the SDK's default", r.MaxAttempts(), newRetryer(0).MaxAttempts())
	}
}

// A lane's backoff: the first answer of a step doubles the wait (from
// throttleMinDelay, up to throttleMaxDelay) and holds every request of the
// lane; answers to requests sent under an older step change nothing; each
// success halves the wait, down to none.
func TestLaneBackoff(t *testing.T) {
	var l lane
	now := time.Now()
	if d, _ := l.admit(now, true); d != 0 {
		t.Fatalf("a fresh lane holds requests for %v", d)
	}
	_, gen := l.admit(now, true)
	_, stale := l.admit(now, true)
	l.slowDown(now, gen, true)
	if l.delay != throttleMinDelay {
		t.Fatalf("first step %v, want %v", l.delay, throttleMinDelay)
	}
	if d, _ := l.admit(now, true); d < throttleMinDelay/2 {
		t.Errorf("after an answer a request waits %v, want at least %v", d, throttleMinDelay/2)
	}
	l.slowDown(now, stale, true)
	if l.delay != throttleMinDelay {
		t.Errorf("an answer to a request sent before the step changed the wait to %v", l.delay)
	}
	for range 10 {
		_, g := l.admit(now, true)
		l.slowDown(now, g, true)
	}
	if l.delay != throttleMaxDelay {
		t.Errorf("after many answers the step is %v, want the cap %v", l.delay, throttleMaxDelay)
	}
	for l.delay > 0 {
		before := l.delay
		l.ok()
		if l.delay != 0 && l.delay != before/2 {
			t.Fatalf("a success took the step from %v to %v", before, l.delay)
		}
	}
	if !l.idle(now.Add(time.Minute)) {
		t.Error("the lane is not idle a minute after its last step, with no wait left")
	}
}
