//go:build s3once_mutant

package sink

import "github.com/s3once/s3once/internal/mutant"

// The sink's test-only mutation points (see internal/mutant): each puts a
// past bug back when a test, or a child process's S3ONCE_MUTANT, switches
// it on. Builds without the s3once_mutant tag take mutation_off.go.

// mutBarrierSkipsManifest: the barrier reads no partition manifest.
func mutBarrierSkipsManifest() bool { return mutant.On(mutant.BarrierSkipsManifest) }

// mutPartitionOwnExtOnly: the partition checks count only files of the
// run's extension.
func mutPartitionOwnExtOnly() bool { return mutant.On(mutant.PartitionOwnExtOnly) }
