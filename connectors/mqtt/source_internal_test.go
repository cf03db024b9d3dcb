package mqtt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/spool"
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

// TestBatchModel emits batches of spooled messages, of a few particles or
// none, while it finishes the particles of those emitted before in any
// order, failing some, asking for some again meanwhile: Redeliver gives
// back each particle while its batch is in flight; a message leaves the
// spool, and counts as completed, once, when every particle of its batch
// finished, never before.
func TestBatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp("", "mqtt-batch")
		require.NoError(t, err)
		defer os.RemoveAll(dir)
		s, err := NewSource(Config{ConnConfig: ConnConfig{Brokers: []string{"tcp://x:1"}}, Topics: []string{"t/#"}, StateDir: dir})
		require.NoError(t, err)
		// A backlog a previous run left: Pending shows what is not
		// completed.
		sp, err := spool.Open(dir, spool.Config{})
		require.NoError(t, err)
		var batched [][]*message
		lines := 0
		for range rapid.IntRange(1, 4).Draw(t, "batches") {
			var msgs []*message
			for range rapid.IntRange(1, 5).Draw(t, "messages") {
				var payload []byte
				for i := range rapid.IntRange(0, 3).Draw(t, "particles") {
					if i > 0 {
						payload = append(payload, '\n')
					}
					lines++
					payload = fmt.Appendf(payload, "m v=%d %d", lines, lines)
				}
				if len(payload) == 0 {
					payload = []byte("bad") // no particle: rejected
				}
				seq, err := sp.Append(spool.AppendRecord(nil, spool.Record{Source: "t/1", Payload: payload}))
				require.NoError(t, err)
				msgs = append(msgs, &message{topic: "t/1", payload: payload, size: len(payload), seq: seq})
			}
			batched = append(batched, msgs)
		}
		require.NoError(t, sp.Sync())
		require.NoError(t, sp.Close())
		s.spool, err = spool.Open(dir, spool.Config{})
		require.NoError(t, err)
		defer s.spool.Close()

		type batchModel struct {
			seqs []uint64
			ids  []int // indices into out.ids not finished
		}
		out := &emitter{}
		var batches []*batchModel
		var failed uint64
		check := func() {
			pending := map[uint64]bool{}
			require.NoError(t, s.spool.Pending(func(seq uint64, _ []byte) error {
				pending[seq] = true
				return nil
			}))
			var completed uint64
			for _, bm := range batches {
				for _, seq := range bm.seqs {
					assert.Equal(t, len(bm.ids) > 0, pending[seq], "record %d pending", seq)
				}
				if len(bm.ids) == 0 {
					completed += uint64(len(bm.seqs))
				}
			}
			assert.Equal(t, completed, s.stats.Completed.Load(), "messages completed")
			assert.Equal(t, failed, s.stats.Failed.Load(), "particles failed")
		}
		// Batches are emitted while earlier ones finish, so that numbers
		// of finished batches are taken again.
		for len(batched) > 0 || slices.ContainsFunc(batches, func(bm *batchModel) bool { return len(bm.ids) > 0 }) {
			var open []*batchModel
			for _, bm := range batches {
				if len(bm.ids) > 0 {
					open = append(open, bm)
				}
			}
			if len(batched) > 0 && (len(open) == 0 || rapid.Bool().Draw(t, "emit")) {
				bm := &batchModel{}
				for _, m := range batched[0] {
					bm.seqs = append(bm.seqs, m.seq)
				}
				first := len(out.ids)
				require.NoError(t, s.emit(out, batched[0]))
				batched = batched[1:]
				for i := first; i < len(out.ids); i++ {
					bm.ids = append(bm.ids, i)
				}
				batches = append(batches, bm)
				check()
				continue
			}
			bm := rapid.SampledFrom(open).Draw(t, "batch")
			j := rapid.IntRange(0, len(bm.ids)-1).Draw(t, "particle")
			i := bm.ids[j]
			p, err := s.Redeliver(out.ids[i])
			require.NoError(t, err)
			want := out.ps[i]
			want.Seq, p.Seq = 0, 0 // the engine numbers particles as it emits them
			assert.Equal(t, want, p, "particle %d given back", i)
			if rapid.Bool().Draw(t, "fail") {
				s.Fail(out.ids[i], acker.Failed, nil)
				failed++
			} else {
				s.Ack(out.ids[i])
			}
			bm.ids = slices.Delete(bm.ids, j, j+1)
			check()
		}
		for _, id := range out.ids {
			_, err := s.Redeliver(id)
			assert.Error(t, err, "a particle of a finished batch")
		}
	})
}
