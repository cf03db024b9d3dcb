package jetstreamedge

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// testMsg is a message of the stream, with what the receiver did to it.
type testMsg struct {
	jetstream.Msg
	seq         uint64
	data        []byte
	acked, naks int
}

func (m *testMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.seq, Consumer: m.seq}, NumDelivered: 1}, nil
}
func (m *testMsg) Data() []byte      { return m.data }
func (m *testMsg) Subject() string   { return "s" }
func (m *testMsg) InProgress() error { return nil }
func (m *testMsg) Ack() error {
	m.acked++
	return nil
}
func (m *testMsg) Nak() error {
	m.naks++
	return nil
}

// modelFeed is an instance as the receiver sees it: the test decides
// what it released and when each batch is done.
type modelFeed struct {
	released syncbuffer.Key
	ok       bool
	batches  []modelBatch
	asked    int // checkpoints asked for
}

type modelBatch struct {
	keys []syncbuffer.Key // the data particles handed on
	done func(error)
}

func (f *modelFeed) Deliver(_ context.Context, b *edge.Batch, done func(error)) error {
	var keys []syncbuffer.Key
	for _, it := range b.Items {
		keys = append(keys, keyOf(&it.Particle))
	}
	f.batches = append(f.batches, modelBatch{keys: keys, done: done})
	return nil
}

func (f *modelFeed) Released() (syncbuffer.Key, bool) { return f.released, f.ok }

func (f *modelFeed) Checkpoint() { f.asked++ }

// newTestReceiver returns the receiver of a unit that restored the
// checkpoint at position pos (nil: none), feeding feed.
func newTestReceiver(t testing.TB, pos []byte, feed edge.Feed) *receiver {
	tr := &Transport{cfg: Config{DedupWindow: 1 << 10, MaxAckPending: 4, Logger: slog.New(slog.DiscardHandler)}}
	in := &inlet{t: tr, consumer: "unit"}
	require.NoError(t, in.Resume(pos))
	r := newReceiver(in, feed, &catchUp{})
	in.resume.run(r)
	return r
}

// The receiver acknowledges a message once the engine finished it and a
// committed checkpoint is after it, and only then, once; once every
// message is finished and a checkpoint after them committed, every one is
// acknowledged. A successor that restores the last checkpoint committed
// takes again, of the messages not acknowledged, exactly those whose
// effect that checkpoint does not hold: those delivered after its cut, and
// those whose delivery before it failed.
func TestReceiverAcknowledgesAtCommittedCheckpoints(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		feed := &modelFeed{}
		r := newTestReceiver(t, nil, feed)
		in := r.in
		var (
			msgs   []*testMsg
			states []string // of msgs: "in progress", "done", "failed", "delivered again"
			// of msgs: the delivery number of their latest delivery, and
			// the batch the feed got then.
			orders  []uint64
			batches []int
			keys    [][]syncbuffer.Key // of msgs: their data particles
			enc     encoder
			// cut is the delivery number before the newest checkpoint
			// committed; pos its position.
			cut uint64
			pos []byte
		)
		check := func() {
			for i, m := range msgs {
				require.LessOrEqual(rt, m.acked, 1, "acknowledged once")
				if m.acked == 1 {
					require.Equal(rt, "done", states[i], "only finished messages are acknowledged")
					require.LessOrEqual(rt, orders[i], cut, "acknowledged before a checkpoint after it committed")
				}
			}
		}
		receive := func(m *testMsg, ks []syncbuffer.Key) {
			msgs, states, keys = append(msgs, m), append(states, "in progress"), append(keys, ks)
			r.keep(m)
			require.NoError(rt, r.receiveAll(ctx, []jetstream.Msg{m}))
			orders, batches = append(orders, r.delivered), append(batches, len(feed.batches)-1)
		}
		var failed []int
		redeliver := func(i int) {
			states[i] = "delivered again"
			receive(&testMsg{seq: msgs[i].seq, data: msgs[i].data}, keys[i])
		}
		rt.Repeat(map[string]func(*rapid.T){
			"deliver": func(rt *rapid.T) {
				// Particles of their own: a batch the successor takes
				// tells which message it was.
				var b edge.Batch
				var ks []syncbuffer.Key
				for range rapid.IntRange(1, 3).Draw(rt, "n") {
					p := particle.Particle{Time: rapid.Int64Range(0, 20).Draw(rt, "time"),
						Origin: 1, Seq: uint64(len(msgs)*4 + len(b.Items) + 1), Measurement: "m"}
					b.Items = append(b.Items, edge.Item{Particle: p})
					ks = append(ks, keyOf(&p))
				}
				data, err := enc.appendBatch(nil, stamp{sender: 1, number: uint64(len(msgs) + 1)}, &b)
				require.NoError(rt, err)
				receive(&testMsg{seq: uint64(len(msgs) + 1), data: data}, ks)
			},
			"redeliver": func(rt *rapid.T) {
				if len(failed) == 0 {
					rt.Skip("nothing failed")
				}
				redeliver(failed[0])
				failed = failed[1:]
			},
			"finish": func(rt *rapid.T) {
				var open []int
				for i, s := range states {
					if s == "in progress" {
						open = append(open, i)
					}
				}
				if len(open) == 0 {
					rt.Skip("nothing in progress")
				}
				i := rapid.SampledFrom(open).Draw(rt, "message")
				if orders[i] > cut && rapid.IntRange(0, 3).Draw(rt, "fails") == 0 {
					// A message before a committed cut cannot fail: the
					// checkpoint waited for what it produced.
					states[i] = "failed"
					failed = append(failed, i)
					feed.batches[batches[i]].done(errors.New("failed"))
					require.Equal(rt, 1, msgs[i].naks, "given back")
					return
				}
				states[i] = "done"
				feed.batches[batches[i]].done(nil)
			},
			"checkpoint": func(rt *rapid.T) {
				p, err := in.Position(r.delivered)
				require.NoError(rt, err)
				if rapid.Bool().Draw(rt, "fails") {
					return
				}
				in.Committed(p)
				cut, pos = r.delivered, p
			},
			"settle": func(rt *rapid.T) {
				r.settle()
				check()
			},
		})

		// A successor restores the last checkpoint committed and takes
		// what was not acknowledged.
		next := &modelFeed{}
		successor := newTestReceiver(t, pos, next)
		var redelivered []jetstream.Msg
		var want []int
		for i, m := range msgs {
			if m.acked != 0 || states[i] == "delivered again" {
				continue
			}
			redelivered = append(redelivered, &testMsg{seq: m.seq, data: m.data})
			inState := orders[i] <= cut && states[i] != "failed"
			if !inState {
				want = append(want, i)
			}
		}
		require.NoError(rt, successor.receiveAll(ctx, redelivered))
		require.Len(rt, next.batches, len(want), "the successor takes what the checkpoint does not hold")
		for j, b := range next.batches {
			require.Equal(rt, keys[want[j]], b.keys, "taken again in order")
		}

		// The server delivers again what failed; the instance finishes
		// everything, and a checkpoint commits.
		for _, i := range failed {
			redeliver(i)
		}
		for i, s := range states {
			if s == "in progress" {
				states[i] = "done"
				feed.batches[batches[i]].done(nil)
			}
		}
		p, err := in.Position(r.delivered)
		require.NoError(rt, err)
		in.Committed(p)
		cut = r.delivered
		r.settle()
		check()
		for i, m := range msgs {
			if states[i] == "done" {
				require.Equal(rt, 1, m.acked, "message %d acknowledged at the end", i)
			}
		}
	})
}

// A message the server delivers again while the first delivery is in
// progress here (its in-progress signals came late) is the same message:
// not handed on again, and acknowledged once, through the newest
// delivery, when the engine finished the first. Taken as new, its
// particles were dropped as copies and the message acknowledged at once,
// while a window still held them: after a crash, the worker taking the
// unit over never received them.
func TestReceiverTakesAMessageDeliveredAgainInProgressOnce(t *testing.T) {
	ctx := context.Background()
	feed := &modelFeed{}
	r := newTestReceiver(t, nil, feed)
	var enc encoder
	b := edge.Batch{Items: []edge.Item{{Particle: particle.Particle{Time: 1, Origin: 1, Seq: 1, Measurement: "m"}}}}
	data, err := enc.appendBatch(nil, stamp{sender: 1, number: 1}, &b)
	require.NoError(t, err)
	first := &testMsg{seq: 7, data: data}
	require.True(t, r.keep(first))
	require.NoError(t, r.receiveAll(ctx, []jetstream.Msg{first}))
	require.Len(t, feed.batches, 1)

	again := &testMsg{seq: 7, data: data}
	require.False(t, r.keep(again), "the same message, in progress")
	require.Len(t, feed.batches, 1, "not handed on again")
	r.settle()
	require.Zero(t, first.acked+again.acked, "nothing acknowledged while the first is in progress")

	feed.batches[0].done(nil)
	r.settle()
	require.Zero(t, first.acked+again.acked, "nothing acknowledged before a checkpoint after it committed")
	pos, err := r.in.Position(r.delivered)
	require.NoError(t, err)
	r.in.Committed(pos)
	r.settle()
	require.Equal(t, 0, first.acked, "the first delivery is not acknowledged")
	require.Equal(t, 1, again.acked, "the newest delivery is, once")
	require.Empty(t, r.pending)
	require.Empty(t, r.bySeq)
	require.True(t, r.keep(&testMsg{seq: 7, data: data}), "a delivery after the acknowledgement is new")
}

// A consumer delivers nothing past MaxAckPending messages unacknowledged,
// and a unit acknowledges only at checkpoints: once half of them wait, the
// receiver asks for a checkpoint rather than idle until the interval;
// once per checkpoint committed.
func TestReceiverAsksForACheckpointHalfWayToMaxAckPending(t *testing.T) {
	ctx := context.Background()
	feed := &modelFeed{}
	r := newTestReceiver(t, nil, feed)
	var enc encoder
	deliver := func(n int) {
		for range n {
			number := r.delivered + 1
			b := edge.Batch{Items: []edge.Item{{Particle: particle.Particle{Time: int64(number), Origin: 1, Seq: number, Measurement: "m"}}}}
			data, err := enc.appendBatch(nil, stamp{sender: 1, number: number}, &b)
			require.NoError(t, err)
			m := &testMsg{seq: number, data: data}
			r.keep(m)
			require.NoError(t, r.receiveAll(ctx, []jetstream.Msg{m}))
		}
	}
	deliver(1)
	require.Zero(t, feed.asked, "one of four waits")
	deliver(1)
	require.Equal(t, 1, feed.asked, "two of four wait")
	deliver(1)
	require.Equal(t, 1, feed.asked, "asked once until a checkpoint commits")
	for _, b := range feed.batches {
		b.done(nil)
	}
	pos, err := r.in.Position(r.delivered)
	require.NoError(t, err)
	r.in.Committed(pos)
	r.settle()
	require.Empty(t, r.pending)
	deliver(2)
	require.Equal(t, 2, feed.asked, "asked again after the commit")
}
