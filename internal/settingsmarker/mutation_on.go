//go:build s3once_mutant

package settingsmarker

import "github.com/s3once/s3once/internal/mutant"

// mutMarkerSubset is the package's test-only mutation point (see
// internal/mutant): Check takes any subset of the settings, so a cut
// marker matches what is left of it and a header-only one counts as no
// marker. Builds without the s3once_mutant tag take mutation_off.go.
func mutMarkerSubset() bool { return mutant.On(mutant.MarkerSubset) }
