//go:build !s3once_mutant

package settingsmarker

// Without the s3once_mutant tag the mutation point is always off and the
// package does not link internal/mutant (see mutation_on.go).

func mutMarkerSubset() bool { return false }
