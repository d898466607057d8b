//go:build s3once_mutant

package integration

import (
	"testing"

	"github.com/s3once/s3once/internal/mutant"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// mutantEnv switches bug on in a child built with mutantBinary.
func mutantEnv(env []string, bug mutant.Bug) []string {
	return append(env, mutant.EnvVar+"="+bug.String())
}

// TestMutantThrottleStorm: with the shared backoff and the budget gone and
// the SDK's retry quota back, the storm TestThrottleStorm rides out fails
// the run, so that test's check fails on the broken variant. Nothing is
// wrong even so, and the clean program's rerun completes exactly.
func TestMutantThrottleStorm(t *testing.T) {
	t.Parallel()
	bin := mutantBinary(t, "pipelines/batch")
	clean := binary(t, "pipelines/batch")
	f := newBatchFixture(t, clean)

	bucket := f.srv.Bucket(t)
	o, inj := stormRun(t, bin, mutantEnv(f.env, mutant.NoThrottleBackoff), f.srv, bucket, stormLength)
	if o.Code != 1 {
		t.Fatalf("the broken variant in a %v storm (%d SlowDowns): %v, want exit 1 (the pipeline failed), so that the storm test tells it apart\nstderr:\n%s",
			stormLength, inj.SlowDowns(), o, o.Stderr)
	}
	noWrongObject(t, s3test.Objects(t, f.client, bucket, outPrefix+"/"), f.ref.objects)
	t.Logf("the broken variant failed in the storm: %v after %d SlowDowns; %s", o, inj.SlowDowns(), firstLines(o.Stderr, 3))
	f.rerunExact(t, clean, bucket)
}
