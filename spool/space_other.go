//go:build !unix && !windows

package spool

import "math"

// diskSpace reports unlimited space where the platform does not tell:
// only BacklogConfig.MaxBytes bounds the backlog there.
func diskSpace(string) (free, total int64, err error) {
	return math.MaxInt64, math.MaxInt64, nil
}
