//go:build s3once_mutant

package s3call_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/mutant"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/slowdown"
)

// TestMutantNoThrottleBackoff: without the lanes' backoff and Do's budget,
// and with the SDK's retry quota back, the storm that
// TestThrottleStormWithinBudget rides out fails the call with the raw
// SlowDown within the storm's minute, long before any budget: that test's
// check fails on it.
func TestMutantNoThrottleBackoff(t *testing.T) {
	defer mutant.Set(mutant.NoThrottleBackoff)()
	tc := newThrottled(t, 10*time.Minute, slowdown.Options{})
	tc.inj.Storm(time.Minute)
	began := time.Now()
	err := tc.put(context.Background(), "out/part-a", []byte("storm"))
	took := time.Since(began)
	tc.inj.Calm()
	if err == nil {
		t.Fatal("the broken variant rode out a storm of a minute")
	}
	if took >= time.Minute {
		t.Errorf("the broken variant failed only after %v, when the storm was over", took)
	}
	if errors.Is(err, s3call.ErrThrottled) || s3call.APICode(err) != "SlowDown" {
		t.Errorf("want the raw SlowDown, got: %v", err)
	}
	t.Logf("the broken variant failed after %v and %d SlowDowns: %v", took.Round(time.Millisecond), tc.inj.SlowDowns(), err)
}

// TestMutantDefaultRetryQuota: with the SDK's default retry quota back,
// the outage TestRetryQuotaNeverEndsACall goes through spends it, and the
// flaky calls after it fail at their first error, retries and budget left
// unused: that test's check fails on it.
func TestMutantDefaultRetryQuota(t *testing.T) {
	defer mutant.Set(mutant.DefaultRetryQuota)()
	failed, first := afterOutage(t)
	if failed == 0 {
		t.Fatal("the broken variant retried every flaky call after the outage")
	}
	if !strings.Contains(first.Error(), "quota") {
		t.Errorf("a flaky call failed, but not for the quota: %v", first)
	}
	t.Logf("the broken variant failed %d of 20 flaky calls after the outage: %v", failed, first)
}
