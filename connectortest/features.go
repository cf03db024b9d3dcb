package connectortest

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Defaults for Features.
const (
	// DefaultMessages is how many messages a scenario sends.
	DefaultMessages = 1000
	// DefaultTimeout bounds each wait of a scenario.
	DefaultTimeout = 60 * time.Second
	// DefaultOutage is how long DestinationFailure keeps the destination
	// failing.
	DefaultOutage = 3 * time.Second
)

// Features says what the connector under test guarantees.
type Features struct {
	// Restart says that a Source made again, after the process running
	// the previous one was killed, delivers every message the killed one
	// acknowledged upstream and did not deliver (from durable state, or
	// because upstream sends it again). KillMidStream runs only with it.
	Restart bool
	// DeliveryDelay is how long a Sink's destination may take to show
	// what the Sink acknowledged: zero for a file, a few seconds for a
	// broker that forwards to a subscriber.
	DeliveryDelay time.Duration
	// Messages is how many messages each scenario sends. Defaults to
	// DefaultMessages.
	Messages int
	// Timeout bounds each wait. Defaults to DefaultTimeout.
	Timeout time.Duration
	// Outage is how long DestinationFailure keeps the destination failing
	// once the sink met the failure. Defaults to DefaultOutage.
	Outage time.Duration
}

func (f *Features) setDefaults() {
	if f.Messages == 0 {
		f.Messages = DefaultMessages
	}
	if f.Timeout == 0 {
		f.Timeout = DefaultTimeout
	}
	if f.Outage == 0 {
		f.Outage = DefaultOutage
	}
}

// SourceHarness adapts a source connector to the suite.
type SourceHarness interface {
	// NewSource returns a new Source of the connector. A Source made
	// after another resumes what the other left: same identity (a client
	// id), same durable state, also when made in another process with
	// the same Env.
	NewSource(t testing.TB) topology.Source
	// Publish sends readings upstream, one message each, in order. It
	// returns once upstream took them (a broker confirmed them).
	Publish(t testing.TB, readings []particle.Particle)
}

// SinkHarness adapts a sink connector to the suite.
type SinkHarness interface {
	// NewSink returns a new Sink of the connector: an operation that
	// writes what it processes to its destination.
	NewSink(t testing.TB) operation.Operation
	// Read returns the reading numbers (see Number) that the destination
	// holds, as a process started now would find them, duplicates
	// included.
	Read(t testing.TB) []int
}

// Broker is implemented by harnesses of connectors that talk to a broker
// that the suite may stop and start again. BrokerRestart runs only with
// it; for a sink harness, DestinationFailure uses it when the harness is
// no Breaker.
type Broker interface {
	StopBroker(t testing.TB)
	StartBroker(t testing.TB)
}

// Breaker is implemented by sink harnesses that can make the destination
// fail (a full disk, a closed file) and work again.
type Breaker interface {
	Break(t testing.TB)
	Mend(t testing.TB)
}

// AckRecorder is implemented by harnesses that see what upstream
// delivered to the source and what the source acknowledged, each as a
// sequence of message ids in order (MQTT packet ids). InOrderAcks runs
// only with it.
type AckRecorder interface {
	Acks() (delivered, acked []uint64)
}

// The environment variables of a child process.
const (
	envChild = "CONNECTORTEST_CHILD"
	envOut   = "CONNECTORTEST_OUT"
	envVals  = "CONNECTORTEST_ENV"
)

// Env carries what a harness made in the test process, such as a broker's
// address, to the child process in which KillMidStream runs the source.
type Env struct {
	child bool
	vals  map[string]string
}

func newEnv() *Env { return &Env{vals: map[string]string{}} }

// childEnv returns the Env of a child process, or nil in the test process.
func childEnv() *Env {
	if os.Getenv(envChild) == "" {
		return nil
	}
	e := &Env{child: true}
	_ = json.Unmarshal([]byte(os.Getenv(envVals)), &e.vals)
	return e
}

// Child reports whether the harness is made in the child process: it must
// then use what the test process made, through Get, not make it again.
func (e *Env) Child() bool { return e.child }

// Set records a value for the child process.
func (e *Env) Set(key, value string) { e.vals[key] = value }

// Get returns the value the test process set for key.
func (e *Env) Get(key string) string { return e.vals[key] }
