//go:build !s3once_mutant

package main

// Without the s3once_mutant tag verify's mutation points are always off and
// the program does not link internal/mutant (see mutation_on.go).

func mutVerifyTrustsListing() bool { return false }
func mutVerifyTrustsCounts() bool  { return false }
