//go:build race

package scenario

// raceEnabled: under the race detector the sink acts on FinalizeCommit
// "always" as on "never" (see sink.Config.FinalizeCommit), so such runs
// keep the full partition guarantee.
const raceEnabled = true
