package postgres

import "errors"

// ErrInvalidConfig is wrapped by every error of a Config.
var ErrInvalidConfig = errors.New("postgres: invalid config")

// ErrColumn is wrapped by the error of a particle that the table cannot
// take: a key that names no usable column, or a value whose kind does not
// match its column's type. It comes wrapped with operation.ErrRejected.
var ErrColumn = errors.New("postgres: particle does not fit the table")
