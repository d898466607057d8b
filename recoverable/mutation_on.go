//go:build s3once_mutant

package recoverable

import "github.com/s3once/s3once/internal/mutant"

// The stream's test-only mutation points (see internal/mutant): each puts a
// past bug back when a test switches it on, and is off otherwise. Builds
// without the s3once_mutant tag take mutation_off.go instead.

// mutDropTail: recovery forgets the token's tail.
func mutDropTail() bool { return mutant.On(mutant.DropTail) }

// mutReusePersistKey: a failed Persist gives its sequence number back.
func mutReusePersistKey() bool { return mutant.On(mutant.ReusePersistKey) }
