package mqtt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

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
func (e *emitter) Skip(uint64)                         {}
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

// countedMessage is a paho message that counts its acknowledgements.
type countedMessage struct {
	paho.Message
	topic   string
	payload []byte
	acks    *[]string
}

func (m *countedMessage) Topic() string   { return m.topic }
func (m *countedMessage) Payload() []byte { return m.payload }
func (m *countedMessage) Qos() byte       { return 1 }
func (m *countedMessage) Duplicate() bool { return false }
func (m *countedMessage) Retained() bool  { return false }
func (m *countedMessage) Ack()            { *m.acks = append(*m.acks, m.topic) }

// TestAckBatchMatchesAModel emits messages of one to four readings, in
// batches, and acknowledges their particles in any order, one at a time
// (Ack) or in batches (AckBatch): the broker gets the acknowledgements of
// the longest prefix of messages all of whose particles were acknowledged,
// in order, each once, and the in-flight table ends empty.
func TestAckBatchMatchesAModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, err := NewSource(Config{ConnConfig: ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"t/#"}, Mode: ModeTree})
		require.NoError(t, err)
		var acks, topics []string
		left := map[string]int{} // particles not acknowledged, by message
		owner := map[uint64]string{}
		out := &emitter{}
		for i := range rapid.IntRange(1, 12).Draw(t, "messages") {
			topic := fmt.Sprint("t/", i)
			n := rapid.IntRange(1, 4).Draw(t, "readings")
			var payload []byte
			for j := range n {
				payload = fmt.Appendf(payload, "m v=%d %d\n", j, j+1)
			}
			s.arrive(nil, &countedMessage{topic: topic, payload: payload, acks: &acks})
			topics = append(topics, topic)
			left[topic] = n
			if rapid.Bool().Draw(t, "emit") {
				emitArrivals(t, s, out, owner)
			}
		}
		emitArrivals(t, s, out, owner)
		pending := rapid.Permutation(out.ids).Draw(t, "order")
		for len(pending) > 0 {
			n := rapid.IntRange(1, len(pending)).Draw(t, "batch")
			if n == 1 && rapid.Bool().Draw(t, "one") {
				s.Ack(pending[0])
			} else {
				s.AckBatch(pending[:n])
			}
			for _, id := range pending[:n] {
				left[owner[id]]--
			}
			pending = pending[n:]
			s.release()
			want := 0
			for want < len(topics) && left[topics[want]] == 0 {
				want++
			}
			require.Equal(t, topics[:want], append([]string{}, acks...))
		}
		require.Zero(t, s.inflight.Len())
		require.Equal(t, uint64(len(topics)), s.Stats().Completed.Load())
	})
}

// emitArrivals emits what arrived at s into out, and records the topic of
// each particle's message in owner.
func emitArrivals(t *rapid.T, s *Source, out *emitter, owner map[uint64]string) {
	from := len(out.ids)
	require.NoError(t, s.emit(out, s.arrivals))
	s.arrivals = s.arrivals[:0]
	for _, id := range out.ids[from:] {
		m, ok := s.inflight.Get(id)
		require.True(t, ok)
		owner[id] = m.topic
	}
}
