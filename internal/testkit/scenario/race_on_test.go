//go:build race

package scenario

// raceEnabled: under the race detector the sink acts on FinalizeCommit
// "always" as on "never" (see sink.Config.FinalizeCommit), so such runs
// keep the full partition guarantee.
const raceEnabled = true

// defaultSequences is make test's budget of random sequences in its pass
// with the race detector; the pass without it (where FinalizeCommit
// "always" commits at bundle finalization) takes more.
const defaultSequences = 10
