package influxdb

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrInvalidConfig is wrapped by every error of a Config.
var ErrInvalidConfig = errors.New("influxdb: invalid config")

// ServerError is the server's answer to a write that it did not answer
// with 204: its status code, its message (the "error" or "message" of a
// JSON body, else the body's text) and, for 429 and 503, how long it asked
// to be left alone (Retry-After, zero when it did not say).
type ServerError struct {
	StatusCode int
	Message    string
	RetryAfter time.Duration
	// lines are the line numbers, from one, that a JSON body lists
	// under "errors", as sensorstorm's endpoint does.
	lines []int
}

// Error implements error.
func (e *ServerError) Error() string {
	return fmt.Sprintf("influxdb: server answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}
