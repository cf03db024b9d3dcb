//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package spool

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive lock on f without waiting, or returns
// ErrLocked. flock locks belong to the open file, so a second Open in the
// same process is refused too; the lock ends when f is closed.
func lockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}
