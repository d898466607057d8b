//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package spill

import "os"

// lockFile: no advisory locks here; stale spills are told apart by age alone
// (unlockedAge).
func lockFile(*os.File) error { return errNoFileLocks }
