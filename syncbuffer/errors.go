package syncbuffer

import "errors"

var (
	// ErrInvalidConfig is returned by [New] and [Config.Validate] for a
	// configuration value out of range; the wrapping error names the field.
	ErrInvalidConfig = errors.New("syncbuffer: invalid config")

	// ErrNoInputs is returned by [New] when the buffer would have no inputs.
	ErrNoInputs = errors.New("syncbuffer: no inputs")

	// ErrNilKey is returned by [New] when the key function is nil.
	ErrNilKey = errors.New("syncbuffer: nil key function")

	// ErrSnapshotVersion is wrapped by the error of [Buffer.Restore] for a
	// snapshot of a version it does not read.
	ErrSnapshotVersion = errors.New("syncbuffer: unknown snapshot version")

	// ErrSnapshotInputs is wrapped by the error of [Buffer.Restore] for a
	// snapshot of a buffer with another number of inputs.
	ErrSnapshotInputs = errors.New("syncbuffer: snapshot of another number of inputs")

	// ErrNotEmpty is returned by [Buffer.Restore] for a buffer that has
	// taken something already.
	ErrNotEmpty = errors.New("syncbuffer: restore into a buffer in use")

	// ErrUnknownLatePolicy is returned when parsing a late policy name other
	// than "drop", "side" or "pass".
	ErrUnknownLatePolicy = errors.New("syncbuffer: unknown late policy")
)
