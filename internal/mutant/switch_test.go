//go:build s3once_mutant

package mutant

import "testing"

// TestSet: Set switches exactly the bugs given and its restore puts the
// previous state back.
func TestSet(t *testing.T) {
	if !Enabled {
		t.Fatal("a build with the tag reports the switches disabled")
	}
	restore := Set(DropTail)
	if !On(DropTail) || On(AbortOn409) {
		t.Errorf("after Set(DropTail): drop-tail %v, abort-on-409 %v", On(DropTail), On(AbortOn409))
	}
	restore()
	if On(DropTail) {
		t.Error("restore left drop-tail on")
	}
}
