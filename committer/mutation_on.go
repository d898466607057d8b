//go:build s3once_mutant

package committer

import (
	"time"

	"github.com/s3once/s3once/internal/mutant"
)

// The committer's test-only mutation points (see internal/mutant): each puts
// a past bug back when a test switches it on, and is off otherwise. Builds
// without the s3once_mutant tag take mutation_off.go instead.

// mutAbortOn409: a 409 ConditionalRequestConflict aborts the token's upload.
func mutAbortOn409() bool { return mutant.On(mutant.AbortOn409) }

// mutNoIfNoneMatch: completions are sent without If-None-Match (under
// mutant.BlindCommit too).
func mutNoIfNoneMatch() bool { return mutant.On(mutant.NoIfNoneMatch) || mutant.On(mutant.BlindCommit) }

// mutBlindCommit: a commit after recovery completes without looking at the
// key first.
func mutBlindCommit() bool { return mutant.On(mutant.BlindCommit) }

// mutSettle returns the settle window to use: SettleTimeout, or a few
// seconds under mutant.ShortSettle.
func mutSettle(window time.Duration) time.Duration {
	if mutant.On(mutant.ShortSettle) {
		return min(window, time.Duration(mutant.ShortSettleWindow))
	}
	return window
}
