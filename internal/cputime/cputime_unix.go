//go:build unix

package cputime

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Process returns the user and system CPU time the process used so far.
func Process() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("cputime: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
