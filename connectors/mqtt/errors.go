package mqtt

import (
	"errors"
	"fmt"
	"strings"
)

// errDataAfterJSON reports a JSON payload with more than one value.
var errDataAfterJSON = errors.New("data after the JSON value")

var (
	// ErrNoBroker is returned for a config without broker URLs.
	ErrNoBroker = errors.New("mqtt: no broker")
	// ErrBrokerURL reports a broker URL with an unknown scheme or no
	// host.
	ErrBrokerURL = errors.New("mqtt: bad broker URL")
	// ErrTakeover is wrapped by the *ConnectError of a client whose
	// connections were lost again and again soon after being made,
	// ConnConfig.MaxTakeovers times in a row: another client is using
	// the same client id.
	ErrTakeover = errors.New("mqtt: session taken over again and again")
	// ErrTLSMismatch is wrapped by the *ConnectError of a client whose
	// broker URL says TLS (ssl://) where the broker's port speaks plain
	// MQTT, or the reverse: the broker only resets the connection, and
	// retrying cannot change that.
	ErrTLSMismatch = errors.New("mqtt: TLS and plain MQTT mixed up")
	// ErrNoTopic is returned for a source config without topic filters.
	ErrNoTopic = errors.New("mqtt: no topic filter")
	// ErrNoStateDir is returned for a source in ModeSpool without a
	// state directory.
	ErrNoStateDir = errors.New("mqtt: spool mode needs a state directory")
	// ErrRunTwice is returned by a second call of Source.Run.
	ErrRunTwice = errors.New("mqtt: Run called twice")
	// ErrNoFields reports a JSON object without a value usable as a field.
	ErrNoFields = errors.New("mqtt: no fields")
	// ErrDuplicateKey reports a JSON object with a key given twice, which
	// line protocol's duplicate keys are too (particle.ErrDuplicateField).
	ErrDuplicateKey = errors.New("mqtt: duplicate JSON key")
	// ErrTime reports a timestamp that cannot be read in the configured
	// format.
	ErrTime = errors.New("mqtt: bad timestamp")
	// ErrPayloadTooLarge reports a message larger than
	// Config.MaxPayload, rejected as bad input.
	ErrPayloadTooLarge = errors.New("mqtt: payload too large")
	// ErrTopicMismatch reports a message whose topic does not match
	// PayloadConfig.TopicTags, rejected as bad input.
	ErrTopicMismatch = errors.New("mqtt: topic does not match the topic template")
	// ErrTopicTemplate reports a sink topic template naming a tag the
	// particle does not have.
	ErrTopicTemplate = errors.New("mqtt: topic template")
	// ErrPublishTimeout is the cause, wrapped with
	// operation.ErrDestination, when the broker did not confirm a
	// publication in time: the sink publishes it again and the engine
	// backs off.
	ErrPublishTimeout = errors.New("mqtt: publish not confirmed in time")
	// ErrMarkRefused is the cause of a Sink that publishes at
	// checkpoints stopping because the broker does not let it read the
	// mark of what it published (SinkConfig.CommitTopic): it refused the
	// subscription, or dropped the probe published there. Without the
	// mark the Sink cannot tell what a restore must publish again.
	ErrMarkRefused = errors.New("mqtt: broker does not let the sink read its commit topic")
)

// ConnectError reports why a client stopped connecting: the broker
// refused it (bad credentials, not authorized, client id rejected), TLS
// found the broker's certificate untrusted or the broker rejected the
// client's, the broker URL and the broker's port disagree on TLS, or its
// session was taken over ConnConfig.MaxTakeovers times. Retrying cannot
// fix any of these. Err is paho's error, a
// *tls.CertificateVerificationError, or wraps ErrTLSMismatch or
// ErrTakeover.
type ConnectError struct {
	Brokers  []string
	ClientID string
	Err      error
}

// Error implements error.
func (e *ConnectError) Error() string {
	return fmt.Sprintf("mqtt: connecting to %s as %q: %v", strings.Join(e.Brokers, ", "), e.ClientID, e.Err)
}

// Unwrap returns Err.
func (e *ConnectError) Unwrap() error { return e.Err }
