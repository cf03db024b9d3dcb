package cputime

import (
	"fmt"
	"time"

	"golang.org/x/sys/windows"
)

// Process returns the user and system CPU time the process used so far.
func Process() (time.Duration, error) {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0, fmt.Errorf("cputime: %w", err)
	}
	return ticks(kernel) + ticks(user), nil
}

// ticks converts a Filetime holding a duration, in 100 ns ticks.
func ticks(f windows.Filetime) time.Duration {
	return time.Duration(uint64(f.HighDateTime)<<32|uint64(f.LowDateTime)) * 100
}
