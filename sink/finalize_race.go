//go:build race

package sink

// finalizeSupported is false in race-enabled builds: the writer never asks
// for bundle finalization there, whatever Config.FinalizeCommit says. Beam Go
// v2.77's harness updates its table of plans in the FinalizeBundle handler
// without the lock its ProcessBundle handler holds, so a pipeline that asks
// for finalization trips the race detector inside the SDK. Such builds rely
// on the commit stage alone, which commits every file in any case; the tests
// of the finalizing writer on prism run in builds without the race detector
// (`make test` runs them in a second pass).
const finalizeSupported = false
