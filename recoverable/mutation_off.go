//go:build !s3once_mutant

package recoverable

// Without the s3once_mutant tag the stream's mutation points are always off
// and the package does not link internal/mutant (see mutation_on.go).

func mutDropTail() bool { return false }

func mutReusePersistKey() bool { return false }
