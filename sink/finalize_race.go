//go:build race

package sink

// finalizeCommits is off in race-enabled builds. The Beam Go SDK's harness
// (v2.77) updates its table of plans in the FinalizeBundle handler without the
// lock the ProcessBundle handler holds, so any pipeline that asks for bundle
// finalization trips the race detector inside the SDK, whatever the callback
// does. Such builds rely on the commit stage alone (which commits every file
// in any case); `make test` also runs the sink's tests without the race
// detector, where the finalization path is exercised on prism.
const finalizeCommits = false
