package mqtt

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// A checkpoint's snapshot of the sink returns only once the broker
// confirmed every publication made before it: with checkpoints, their
// inputs are acknowledged at the commit that follows.
func TestSinkSnapshotWaitsForConfirmations(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	s, err := NewSink(SinkConfig{ConnConfig: ConnConfig{Brokers: []string{broker.URL()}, ClientID: "sink-snapshot"}, Topic: "results/{sensor}", MaxInflight: 1000})
	require.NoError(t, err)
	defer s.Close()
	out := &connectortest.Emitter{}
	for i := range 200 {
		p := particle.Particle{Time: int64(i), Measurement: "reading", Tags: []particle.Tag{{Key: "sensor", Value: "s"}},
			Fields: []particle.Field{{Key: "v", Value: particle.Int(int64(i))}}}
		require.NoError(t, s.Process(context.Background(), p, out))
	}
	require.NoError(t, s.Snapshot(state.NewWriter(nil)))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pubs := range s.pending {
		for _, p := range pubs {
			select {
			case <-p.tok.Done():
				require.NoError(t, p.tok.Error())
			default:
				t.Fatalf("publication to %s unconfirmed after the snapshot", p.msg.topic)
			}
		}
	}
}

// pendingToken is a publication the broker never confirms.
type pendingToken struct{ done chan struct{} }

func (p pendingToken) Wait() bool                     { <-p.done; return true }
func (p pendingToken) WaitTimeout(time.Duration) bool { return false }
func (p pendingToken) Done() <-chan struct{}          { return p.done }
func (p pendingToken) Error() error                   { return nil }

// A publication the broker does not confirm in time fails the snapshot,
// and so the checkpoint, rather than let its input be acknowledged.
func TestSinkSnapshotFailsOnAnUnconfirmedPublication(t *testing.T) {
	s, err := NewSink(SinkConfig{ConnConfig: ConnConfig{Brokers: []string{"tcp://127.0.0.1:1"}}, Topic: "results", PublishTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	s.pending[nil] = []publication{{tok: pendingToken{done: make(chan struct{})}, msg: outMessage{topic: "results"}, deadline: s.cfg.Wall.Now().Add(s.cfg.PublishTimeout)}}
	require.ErrorIs(t, s.Snapshot(state.NewWriter(nil)), ErrPublishTimeout)
}
