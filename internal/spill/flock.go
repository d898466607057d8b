//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package spill

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f without waiting. The lock belongs
// to f's open file, so it conflicts with any other open of the same file,
// in this process too, and the kernel drops it when the process dies.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	switch {
	case ferr == nil:
		return nil
	case errors.Is(ferr, syscall.EWOULDBLOCK):
		return errLocked
	case errors.Is(ferr, syscall.ENOLCK), errors.Is(ferr, syscall.EOPNOTSUPP):
		return errNoFileLocks
	default:
		return ferr
	}
}
