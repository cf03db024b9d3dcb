package mqtt

import "errors"

var (
	// ErrNoBroker is returned for a config without broker URLs.
	ErrNoBroker = errors.New("mqtt: no broker")
	// ErrNoTopic is returned for a source config without topic filters.
	ErrNoTopic = errors.New("mqtt: no topic filter")
	// ErrNoStateDir is returned for a source in ModeSpool without a
	// state directory.
	ErrNoStateDir = errors.New("mqtt: spool mode needs a state directory")
	// ErrRunTwice is returned by a second call of Source.Run.
	ErrRunTwice = errors.New("mqtt: Run called twice")
	// ErrNoFields reports a JSON object without a value usable as a field.
	ErrNoFields = errors.New("mqtt: no fields")
	// ErrTime reports a timestamp that cannot be read in the configured
	// format.
	ErrTime = errors.New("mqtt: bad timestamp")
	// ErrTopicTemplate reports a sink topic template naming a tag the
	// particle does not have.
	ErrTopicTemplate = errors.New("mqtt: topic template")
	// ErrPublishTimeout fails a particle whose publication the broker did
	// not confirm within SinkConfig.PublishTimeout.
	ErrPublishTimeout = errors.New("mqtt: publish not confirmed in time")
)
