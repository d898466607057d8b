//go:build s3once_mutant

package mutant

import (
	"fmt"
	"os"
	"sync/atomic"
)

// Enabled reports whether this build carries the switches (the
// s3once_mutant build tag).
const Enabled = true

var on atomic.Uint32

// A child process built with the tag takes its bugs from EnvVar. A name it
// does not know stops it at once: a test that meant to run a mutant must
// never pass on a clean build by a typo.
func init() {
	b, err := Parse(os.Getenv(EnvVar))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", EnvVar, err)
		os.Exit(2)
	}
	on.Store(uint32(b))
}

// On reports whether b is switched on.
func On(b Bug) bool { return on.Load()&uint32(b) != 0 }

// Set switches exactly the bugs in b on (0: all off) and returns a function
// that restores the previous state. Tests only.
func Set(b Bug) (restore func()) {
	prev := on.Swap(uint32(b))
	return func() { on.Store(prev) }
}
