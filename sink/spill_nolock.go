//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package sink

import "os"

// lockFile: no advisory locks here; stale spills are told apart by age alone
// (unlockedSpillAge).
func lockFile(*os.File) error { return errNoFileLocks }
