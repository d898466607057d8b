//go:build !s3once_mutant

package sink

// Without the s3once_mutant tag the sink's mutation points are always off
// and the package does not link internal/mutant (see mutation_on.go).

func mutBarrierSkipsManifest() bool { return false }
func mutPartitionOwnExtOnly() bool  { return false }
