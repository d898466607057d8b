//go:build s3once_mutant

package s3call

import "github.com/s3once/s3once/internal/mutant"

// s3call's test-only mutation point (see internal/mutant). Builds without
// the s3once_mutant tag take mutation_off.go instead.

// mutNoThrottleBackoff: SlowDown answers get neither the lanes' backoff nor
// Do's budget, and the SDK's retry quota is back.
func mutNoThrottleBackoff() bool { return mutant.On(mutant.NoThrottleBackoff) }

// mutDefaultRetryQuota: the SDK's retry quota is back.
func mutDefaultRetryQuota() bool { return mutant.On(mutant.DefaultRetryQuota) }
