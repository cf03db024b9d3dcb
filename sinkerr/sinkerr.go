// Package sinkerr tells a failing destination from bad data: the one
// distinction the engine's retry and dead-letter handling turns on (see
// DESIGN.md, "Failures").
//
// An operation that writes somewhere (a file, a broker, a database) and
// cannot, because the destination fails (a write error, a full disk, a
// broker away), returns an error that wraps ErrDestination. That is not
// the data's fault: the engine retries the input at that operation with
// backoff, holding back what comes after it, and never acknowledges or
// dead-letters the input because of the failure. Any other error means
// the input is bad: it is dead-lettered and acknowledged.
//
// A sink wraps its own error with both, so that callers can match either:
//
//	func (e *WriteError) Unwrap() []error { return []error{sinkerr.ErrDestination, e.Err} }
//
// or, without a type of its own, fmt.Errorf("%w: %w", sinkerr.ErrDestination, err).
package sinkerr

import "errors"

// ErrDestination marks an error as a failure of the destination, not of
// the data: match it with errors.Is.
var ErrDestination = errors.New("destination failure")
