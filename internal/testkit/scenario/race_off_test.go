//go:build !race

package scenario

const raceEnabled = false

// defaultSequences is make test's budget of random sequences in its pass
// without the race detector (make soak: S3ONCE_SCENARIOS).
const defaultSequences = 30
