package operation

import "errors"

// ErrInvalidConfig is wrapped by every error of a built-in operation's
// configuration.
var ErrInvalidConfig = errors.New("operation: invalid config")

// ErrDecode is wrapped by the error of a typed operation whose decode
// function rejected its input.
var ErrDecode = errors.New("operation: decode")
