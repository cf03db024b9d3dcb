package mqtt

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/particle"
)

// stuckMessage is a paho message whose acknowledgement blocks until
// released, as paho's does while the network does not take the PUBACK.
type stuckMessage struct {
	paho.Message
	topic   string
	payload []byte
	release chan struct{}
	acked   chan<- string
}

func (m *stuckMessage) Topic() string   { return m.topic }
func (m *stuckMessage) Payload() []byte { return m.payload }
func (m *stuckMessage) Qos() byte       { return 1 }
func (m *stuckMessage) Duplicate() bool { return false }
func (m *stuckMessage) Retained() bool  { return false }
func (m *stuckMessage) Ack() {
	<-m.release
	m.acked <- m.topic
}

// emitter collects the message ids of what a source emits.
type emitter struct {
	mu  sync.Mutex
	ids []uint64
	ps  []particle.Particle
}

func (e *emitter) Emit(particle.Particle) error { return nil }
func (e *emitter) EmitTracked(p particle.Particle, id uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ids = append(e.ids, id)
	e.ps = append(e.ps, p)
	return nil
}
func (e *emitter) EmitMeta(int64, particle.Meta) error { return nil }
func (e *emitter) Reject(error, []byte)                {}
func (e *emitter) Flush() error                        { return nil }

// TestTreeAckOffTheCaller completes messages in tree mode while paho's
// acknowledgement blocks: Ack returns at once, and the acknowledgements
// leave later, from the source's goroutine, in arrival order.
func TestTreeAckOffTheCaller(t *testing.T) {
	s, err := NewSource(Config{ConnConfig: ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"t/#"}, Mode: ModeTree})
	require.NoError(t, err)
	release := make(chan struct{})
	acked := make(chan string, 2)
	for _, topic := range []string{"t/1", "t/2"} {
		s.arrive(nil, &stuckMessage{topic: topic, payload: []byte("m v=1 1"), release: release, acked: acked})
	}
	s.startAcks()
	out := &emitter{}
	require.NoError(t, s.emit(out, s.arrivals))
	require.Len(t, out.ids, 2)

	returned := make(chan struct{})
	go func() {
		defer close(returned)
		s.Ack(out.ids[1]) // out of order: nothing to acknowledge yet
		s.Ack(out.ids[0])
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Ack waited for the network")
	}
	close(release)
	assert.Equal(t, "t/1", <-acked)
	assert.Equal(t, "t/2", <-acked)
	require.NoError(t, s.Close())
	assert.Equal(t, uint64(2), s.Stats().Acked.Load())
}

// Redeliver gives back each particle as it was emitted, from the message
// still in flight, a time-less reading with its receive time; once the
// message is finished, its ids are unknown.
func TestRedeliverDecodesTheMessageAgain(t *testing.T) {
	s, err := NewSource(Config{ConnConfig: ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"t/#"}, Mode: ModeTree})
	require.NoError(t, err)
	release := make(chan struct{})
	close(release)
	acked := make(chan string, 2)
	s.arrive(nil, &stuckMessage{topic: "t/1", payload: []byte("m v=1 1\nbad\nm v=2\nm,k=x v=3 3"), release: release, acked: acked})
	s.arrive(nil, &stuckMessage{topic: "t/2", payload: []byte("m v=4 4"), release: release, acked: acked})
	s.startAcks()
	out := &emitter{}
	require.NoError(t, s.emit(out, s.arrivals))
	require.Len(t, out.ids, 4)
	for i, id := range out.ids {
		p, err := s.Redeliver(id)
		require.NoError(t, err)
		want := out.ps[i]
		want.Seq, p.Seq = 0, 0 // the engine numbers particles as it emits them
		assert.Equal(t, want, p, "particle %d", i)
	}
	for _, id := range out.ids {
		s.Ack(id)
	}
	for _, id := range out.ids {
		_, err := s.Redeliver(id)
		assert.Error(t, err)
	}
	assert.Equal(t, "t/1", <-acked)
	assert.Equal(t, "t/2", <-acked)
	require.NoError(t, s.Close())
}

// refusing is an emitter that refuses every particle with err.
type refusing struct {
	emitter
	err error
}

func (r *refusing) EmitTracked(particle.Particle, uint64) error { return r.err }

// An emit refused while the source runs ends it with the error; one
// refused because the topology stops ends it quietly.
func TestEmitErrorEndsTheSource(t *testing.T) {
	s, err := NewSource(Config{ConnConfig: ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"t/#"}, Mode: ModeTree})
	require.NoError(t, err)
	boom := errors.New("boom")
	s.queue <- &message{topic: "t/1", payload: []byte("m v=1 1")}
	require.ErrorIs(t, s.emitLoop(t.Context(), &refusing{err: boom}), boom)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s.queue <- &message{topic: "t/1", payload: []byte("m v=1 2")}
	require.NoError(t, s.emitLoop(ctx, &refusing{err: context.Canceled}))
	require.NoError(t, s.Close())
}
