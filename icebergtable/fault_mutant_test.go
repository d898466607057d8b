package icebergtable

import (
	"testing"

	"github.com/s3once/s3once/internal/mutant"
)

// catchMutant runs loops of one fault kind and scenario with the bug
// switched on until the independent check fails one; a mutant that
// survives ten loops is a matrix that cannot see it. It switches the bug
// on unless the caller did (kinds tried by parallel subtests: see
// catchMutantKinds).
func catchMutant(t *testing.T, bug mutant.Bug, kind faultKind, scenario string) {
	t.Helper()
	if !mutant.Enabled {
		t.Skip("mutation points exist only in builds with the s3once_mutant tag")
	}
	var sc faultScenario
	for _, s := range faultScenarios {
		if s.name == scenario {
			sc = s
		}
	}
	if !mutant.On(bug) {
		defer mutant.Set(bug)()
	}
	fx := newFaultFixture(t)
	var tally faultTally
	for seed := uint64(1); seed <= 10; seed++ {
		if err := runFaultLoop(t, fx, int(seed), seed, kind, sc, &tally); err != nil {
			t.Logf("%v caught at seed %d: %v", bug, seed, err)
			return
		}
	}
	t.Fatalf("%v survived 10 loops of %v in the %s scenario (%v): the matrix does not catch it", bug, kind, scenario, &tally)
}

// The bug of taking a conflict answer at its word (removing the round's
// manifest list and manifests without a reload): commits answered with a
// conflict after they landed lose their snapshot's manifest list, which
// the matrix's check reads.
func TestMutantFaultMatrixDiscardOnConflict(t *testing.T) {
	catchMutant(t, mutant.TableDiscardOnConflict, faultConflictAfterApply, "retry")
}

// The bug of trusting the remembered table: a run found there is
// reported without the reload, so a run rolled back past after its
// commit succeeded is never appended again, and main lacks it.
func TestMutantTableTrustStaleHead(t *testing.T) {
	catchMutant(t, mutant.TableTrustStaleHead, faultDelay, "rollback")
}

// The bug of taking an error that says nothing of the commit as a
// refusal and removing what the round staged: a commit that landed
// before its 5xx, timeout, cancellation or reset loses its manifest list,
// which the matrix's check reads. One loop per kind.
func TestMutantFaultMatrixDiscardOnAmbiguous(t *testing.T) {
	catchMutantKinds(t, mutant.TableDiscardOnAmbiguous, "retry", fault5xx, faultTimeout, faultCanceled, faultReset)
}

// The bug of taking the commit's error as the commit done: a run whose
// commit was refused (another writer's commit, a failed requirement) or
// never made (SQLITE_BUSY) is reported as appended, and main lacks it.
func TestMutantFaultMatrixErrorAsLanded(t *testing.T) {
	catchMutantKinds(t, mutant.TableErrorAsLanded, "retry", faultRefused, faultRequirement, faultBusy)
}

// catchMutantKinds is catchMutant for each kind, in parallel subtests
// (most of a loop is the table stage's back-off), the bug switched on
// until the last of them ends.
func catchMutantKinds(t *testing.T, bug mutant.Bug, scenario string, kinds ...faultKind) {
	if !mutant.Enabled {
		t.Skip("mutation points exist only in builds with the s3once_mutant tag")
	}
	t.Cleanup(mutant.Set(bug))
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			catchMutant(t, bug, kind, scenario)
		})
	}
}
