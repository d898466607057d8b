//go:build s3once_mutant

package icebergtable

import "github.com/s3once/s3once/internal/mutant"

// The table stage's test-only mutation points (see internal/mutant): each
// puts a bug back when a test switches it on. Builds without the
// s3once_mutant tag take mutation_off.go.

// mutTableDiscardOnConflict: a conflict answer removes the staged files
// without a reload.
func mutTableDiscardOnConflict() bool { return mutant.On(mutant.TableDiscardOnConflict) }

// mutTableTrustStaleHead: a run found in the remembered table is reported
// without the reload.
func mutTableTrustStaleHead() bool { return mutant.On(mutant.TableTrustStaleHead) }

// mutTableDiscardOnAmbiguous: an error that says nothing of the commit
// removes the staged files.
func mutTableDiscardOnAmbiguous() bool { return mutant.On(mutant.TableDiscardOnAmbiguous) }

// mutTableErrorAsLanded: any error of the commit is taken as the commit
// done.
func mutTableErrorAsLanded() bool { return mutant.On(mutant.TableErrorAsLanded) }

// mutTableSkipRunLookup: the run is committed without looking for it in
// the table.
func mutTableSkipRunLookup() bool { return mutant.On(mutant.TableSkipRunLookup) }
