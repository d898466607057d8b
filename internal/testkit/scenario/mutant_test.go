//go:build s3once_mutant

package scenario

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/s3once/s3once/internal/mutant"
)

// The partition holes, put back one at a time through internal/mutant's
// switches, must each be found by the generator's random share: no pinned
// seed, and no sequence drawn for the bug.
var partitionMutants = []mutant.Bug{
	mutant.BarrierSkipsManifest,
	mutant.MarkerSubset,
	mutant.PartitionOwnExtOnly,
	mutant.VerifyTrustsListing,
	mutant.VerifyTrustsCounts,
}

// mutantSequences bounds the random sequences a mutant may take to be
// found; envMutantSequences overrides it. A sequence takes about two
// seconds; a mutant is found in the first few dozen in most seeds
// (docs/testing.md has the rates).
const (
	mutantSequences    = 80
	envMutantSequences = "S3ONCE_MUTANT_SEQUENCES"
)

// TestMutantScenarios switches each partition hole back on, in the sink of
// this process and in the s3once binary verify runs (built with the
// s3once_mutant tag, switched through S3ONCE_MUTANT), and runs random
// sequences until one breaks a property. A mutant no sequence finds within
// the bound fails the test: the generator could no longer find that hole.
func TestMutantScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("the scenario generator runs pipelines on prism")
	}
	bound := mutantSequences
	if v := os.Getenv(envMutantSequences); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a count of sequences", envMutantSequences, v)
		}
		bound = n
	}
	master := masterSeed(t)
	v := newVerifier(t)
	for _, bug := range partitionMutants {
		t.Run(bug.String(), func(t *testing.T) {
			defer mutant.Set(bug)()
			t.Setenv(mutant.EnvVar, bug.String())
			mr := rand.New(rand.NewPCG(master, uint64(bug)))
			for i := range bound {
				seed := mr.Uint64()>>1 | fullFilesBias
				s := runSequence(t, seed, v)
				if len(s.failures) > 0 {
					f := s.failures[0]
					t.Logf("found by random sequence %d (seed %d, %d runs): [%s: %s] %s", i+1, seed, s.runs, f.kind, f.class, clipText(f.text))
					return
				}
			}
			t.Errorf("%s: no property broken in %d random sequences (master seed %d): the generator no longer finds this hole", bug, bound, master)
		})
	}
}
