package replay

import "errors"

var (
	// ErrNoInputs reports a Config without inputs.
	ErrNoInputs = errors.New("replay: no inputs")
	// ErrInvalidConfig reports a Config that cannot be used.
	ErrInvalidConfig = errors.New("replay: invalid config")
	// ErrInvalidSpeed reports a speed that is neither Max nor within
	// [streamclock.MinSpeed, streamclock.MaxSpeed].
	ErrInvalidSpeed = errors.New("replay: invalid speed")
	// ErrWildTimestamp is the error of a record rejected for a wild
	// timestamp (see Config.FutureBound).
	ErrWildTimestamp = errors.New("replay: wild timestamp")
	// ErrRan reports a second Run of a Source.
	ErrRan = errors.New("replay: source already ran")
)
