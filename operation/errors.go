package operation

import (
	"errors"
	"fmt"
)

// ErrDecode is wrapped by the error of a typed operation whose decode
// function rejected its input.
var ErrDecode = errors.New("operation: decode")

// ErrDestination marks the error of a failing destination: a write error,
// a full disk, a broker or database away. It is not the data's fault: the
// engine retries the same call at the failing bolt instance with backoff,
// which holds the instance and, by backpressure, its sources; it never
// acknowledges or dead-letters the input because of it, and stops the run
// once the destination has failed for too long, leaving what is unfinished
// to the next run. Wrap it: fmt.Errorf("%w: %w", operation.ErrDestination,
// err). A call that fails this way must not have emitted anything.
var ErrDestination = errors.New("operation: destination failed")

// ErrRefused marks the error of a destination that refuses the writes for
// good: credentials it does not accept, a database or bucket that does not
// exist. Retrying cannot help, so the engine stops the run at once, as when
// it gives up on a failing destination, with the error as the reason; it
// wraps ErrDestination, so that nothing is acknowledged or dead-lettered
// because of it. Wrap it: fmt.Errorf("%w: %w", operation.ErrRefused, err).
var ErrRefused = fmt.Errorf("%w: refused", ErrDestination)

// ErrRejected marks the error of an input that an operation rejects as
// bad data: the engine dead-letters it with the error and acknowledges it
// at once, without retrying.
var ErrRejected = errors.New("operation: input rejected")

// ErrWindowClosed is the error of a particle all of whose windows have
// already emitted their results: a particle replayed after a failure, or a
// late one passed through. It wraps ErrRejected, so that such a particle
// is dead-lettered, never acknowledged silently.
var ErrWindowClosed = fmt.Errorf("%w: its windows are closed", ErrRejected)

// ErrStateMismatch is wrapped by the error of Restore given the snapshot of
// an operation configured otherwise: another window kind or size, or
// accumulators encoded another way.
var ErrStateMismatch = errors.New("operation: snapshot of another configuration")
