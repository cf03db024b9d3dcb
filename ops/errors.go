package ops

import "errors"

// ErrInvalidConfig is wrapped by every error of a configuration's
// Validate, and so of a constructor given an invalid configuration.
var ErrInvalidConfig = errors.New("ops: invalid config")
