//go:build !race

package sink

// finalizeCommits: see finalize_race.go.
const finalizeCommits = true
