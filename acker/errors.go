package acker

import "errors"

var (
	// ErrFull is returned by [Table.Init] when Config.Capacity trees are
	// pending. The caller should hold the source back until trees finish.
	ErrFull = errors.New("acker: table full")

	// ErrInvalidConfig is wrapped by the errors of [Config.Validate].
	ErrInvalidConfig = errors.New("acker: invalid config")
)
