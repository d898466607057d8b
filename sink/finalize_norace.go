//go:build !race

package sink

// finalizeSupported: see finalize_race.go.
const finalizeSupported = true
