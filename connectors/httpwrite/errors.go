package httpwrite

import "errors"

var (
	// ErrRunTwice is returned by Run when the Source already ran.
	ErrRunTwice = errors.New("httpwrite: Run called twice")
	// ErrSpoolRecord is returned by Run for a spool record it cannot
	// read: written by this package and checksummed, so a bug, not bad
	// input.
	ErrSpoolRecord = errors.New("httpwrite: spool record unreadable")
)
