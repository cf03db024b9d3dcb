//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockServer takes the lock on the server, shared or exclusive, blocking
// until it has it, and returns its release: a file lock, since the tests
// of different packages run in processes of their own at once.
func lockServer(exclusive bool) (release func(), err error) {
	path := filepath.Join(os.TempDir(), "sensorstorm-pgtest.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("pgtest: lock %s: %w", path, err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pgtest: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
