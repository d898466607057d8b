//go:build s3once_mutant

package integration

import (
	"testing"

	"github.com/s3once/s3once/internal/mutant"
)

// TestMutantWorkerKillBlindCommit: workers whose commits neither look at
// the key first nor carry If-None-Match. A worker killed mid-commit leaves
// part of the run committed; the attempt that then succeeds completes
// those files again over the objects already there, which
// TestWorkerKillLoop's check (a file an attempt that died committed is
// never committed again) catches. (Either guard alone keeps the check
// green: the commit stage looks first, and the completion is conditional.) The
// bytes are the same, so only the modification times tell. A loop whose
// kill came after the worker ended, so that no attempt died with a file
// committed, proves nothing either way and is run again, up to three
// times.
func TestMutantWorkerKillBlindCommit(t *testing.T) {
	t.Parallel()
	rig := newKillRig(t, mutantBinary(t, "pipelines/batch"), mutantEnv(nil, mutant.BlindCommit))
	base := crashSeed()
	for i := range 3 {
		l := rig.loop(t, base+uint64(i), true)
		t.Logf("loop %d: %s; %d files kept from attempts that died, %d of them committed again", i, l.story, len(l.earlier), len(l.recommitted))
		delete(l.earlier, outPrefix+"/"+settingsMarker) // written by the barrier, never committed
		if len(l.earlier) == 0 {
			continue
		}
		if len(l.recommitted) == 0 {
			t.Errorf("the broken variant committed none of the %d files an attempt that died had committed again: TestWorkerKillLoop cannot tell it apart", len(l.earlier))
		}
		return
	}
	t.Fatal("in 3 loops no worker was killed with part of the run committed")
}
