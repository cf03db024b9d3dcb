package httpwrite

import "errors"

var (
	// ErrRunTwice is returned by Run when the Source already ran.
	ErrRunTwice = errors.New("httpwrite: Run called twice")
)
