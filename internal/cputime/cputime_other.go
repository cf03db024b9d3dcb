//go:build !unix && !windows

package cputime

import (
	"errors"
	"time"
)

// Process reports that this platform has no CPU time to read.
func Process() (time.Duration, error) {
	return 0, errors.New("cputime: not available on this platform")
}
