//go:build !s3once_mutant

package committer

import "time"

// Without the s3once_mutant tag the committer's mutation points are always
// off and the package does not link internal/mutant (see mutation_on.go).

func mutAbortOn409() bool { return false }

func mutNoIfNoneMatch() bool { return false }
func mutBlindCommit() bool   { return false }

func mutSettle(window time.Duration) time.Duration { return window }
