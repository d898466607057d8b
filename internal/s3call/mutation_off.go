//go:build !s3once_mutant

package s3call

// Without the s3once_mutant tag the mutation point is always off and the
// package does not link internal/mutant (see mutation_on.go).

func mutNoThrottleBackoff() bool { return false }

func mutDefaultRetryQuota() bool { return false }
