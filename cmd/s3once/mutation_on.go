//go:build s3once_mutant

package main

import "github.com/s3once/s3once/internal/mutant"

// verify's test-only mutation points (see internal/mutant), switched on by a
// test through S3ONCE_MUTANT in a binary built with the s3once_mutant tag.

// mutVerifyTrustsListing: a partition without a manifest counts as proved
// by its listing.
func mutVerifyTrustsListing() bool { return mutant.On(mutant.VerifyTrustsListing) }

// mutVerifyTrustsCounts: --read takes the manifest's record counts as
// they are.
func mutVerifyTrustsCounts() bool { return mutant.On(mutant.VerifyTrustsCounts) }
