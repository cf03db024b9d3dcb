package jetstreamedge

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// memoryKV is a key-value bucket in memory: what frontiers uses of one.
type memoryKV struct {
	jetstream.KeyValue
	mu   sync.Mutex
	vals map[string][]byte
}

func (kv *memoryKV) Put(_ context.Context, key string, value []byte) (uint64, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	kv.vals[key] = slices.Clone(value)
	return uint64(len(kv.vals)), nil
}

func (kv *memoryKV) Get(_ context.Context, key string) (jetstream.KeyValueEntry, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	v, ok := kv.vals[key]
	if !ok {
		return nil, jetstream.ErrKeyNotFound
	}
	return entry{value: v}, nil
}

type entry struct {
	jetstream.KeyValueEntry
	value []byte
}

func (e entry) Value() []byte { return e.value }

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

func newTestReceiver(kv *memoryKV, feed edge.Feed) *receiver {
	t := &Transport{cfg: Config{DedupWindow: 1 << 10, Logger: slog.New(slog.DiscardHandler)}, frontiers: frontiers{kv: kv}}
	return newReceiver(&inlet{t: t, consumer: "unit"}, feed, &catchUp{})
}

// The receiver acknowledges a message only once the frontier recorded is
// past every particle it handed on from it, so that a receiver that takes
// the unit over drops copies of them; it never moves the recorded
// frontier back, nor past a particle of a message in progress or the
// instance's next position; and once the instance released and finished
// everything, everything is acknowledged. Then a successor drops, of the
// messages not acknowledged, exactly the particles before the frontier.
func TestReceiverAcknowledgesBehindTheFrontier(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		kv := &memoryKV{vals: map[string][]byte{}}
		feed := &modelFeed{}
		r := newTestReceiver(kv, feed)
		var (
			msgs   []*testMsg
			states []string              // of msgs: "in progress", "done", "failed"
			carry  [][]particle.Particle // of msgs: the data particles
			// behind is, of msgs, the instance's position when it came:
			// a particle before it is late or behind, handled at once.
			behind []syncbuffer.Key
			enc    encoder
			sent   []particle.Particle
		)
		saved := func() (syncbuffer.Key, bool) {
			k, ok, err := r.in.t.frontiers.load(ctx, "unit")
			require.NoError(rt, err)
			return k, ok
		}
		var last syncbuffer.Key
		var hadLast bool
		check := func() {
			k, ok := saved()
			if hadLast {
				require.True(rt, ok && !k.Less(last), "the frontier never goes back")
			}
			last, hadLast = k, ok
			for i, m := range msgs {
				require.LessOrEqual(rt, m.acked+m.naks, 1, "settled once")
				if m.acked == 1 {
					require.Equal(rt, "done", states[i], "only finished messages are acknowledged")
					for _, p := range feed.batches[i].keys {
						require.True(rt, ok && p.Less(k), "acknowledged before the frontier passed %v (frontier %v)", p, k)
					}
				}
				if (states[i] == "in progress" || states[i] == "failed") && ok {
					for _, p := range feed.batches[i].keys {
						require.False(rt, p.Less(k) && !p.Less(behind[i]), "the frontier passed %v, in progress", p)
					}
				}
			}
			if ok && feed.ok {
				require.False(rt, after(feed.released).Less(k), "the frontier passed the instance's next position")
			}
		}
		// receive hands the receiver m, which carries ps.
		receive := func(m *testMsg, ps []particle.Particle) {
			msgs, states, carry = append(msgs, m), append(states, "in progress"), append(carry, ps)
			behind = append(behind, feed.released)
			if !feed.ok {
				behind[len(behind)-1] = syncbuffer.Key{Time: math.MinInt64}
			}
			r.keep(m)
			require.NoError(rt, r.receiveAll(ctx, []jetstream.Msg{m}))
		}
		// failed are the messages that failed and that the server
		// delivers again.
		var failed []int
		redeliver := func(i int) {
			states[i] = "delivered again"
			receive(&testMsg{seq: msgs[i].seq, data: msgs[i].data}, carry[i])
		}
		rt.Repeat(map[string]func(*rapid.T){
			"deliver": func(rt *rapid.T) {
				var b edge.Batch
				for range rapid.IntRange(0, 3).Draw(rt, "n") {
					var p particle.Particle
					if len(sent) > 0 && rapid.IntRange(0, 4).Draw(rt, "copy") == 0 {
						p = rapid.SampledFrom(sent).Draw(rt, "original")
					} else {
						p = particle.Particle{Time: rapid.Int64Range(0, 20).Draw(rt, "time"), Origin: rapid.Uint32Range(1, 2).Draw(rt, "origin"),
							Seq: uint64(len(sent) + 1), Measurement: "m"}
						sent = append(sent, p)
					}
					b.Items = append(b.Items, edge.Item{Particle: p})
				}
				data, err := enc.appendBatch(nil, stamp{sender: 1, number: uint64(len(msgs) + 1)}, &b)
				require.NoError(rt, err)
				var ps []particle.Particle
				for _, it := range b.Items {
					ps = append(ps, it.Particle)
				}
				receive(&testMsg{seq: uint64(len(msgs) + 1), data: data}, ps)
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
				if rapid.IntRange(0, 3).Draw(rt, "fails") == 0 {
					states[i] = "failed"
					failed = append(failed, i)
					feed.batches[i].done(errors.New("failed"))
					require.Equal(rt, 1, msgs[i].naks, "given back")
					return
				}
				states[i] = "done"
				feed.batches[i].done(nil)
			},
			"release": func(rt *rapid.T) {
				k := syncbuffer.Key{Time: rapid.Int64Range(0, 20).Draw(rt, "time"), Origin: rapid.Uint32Range(0, 3).Draw(rt, "origin")}
				if !feed.ok || feed.released.Less(k) {
					feed.released, feed.ok = k, true
				}
			},
			"settle": func(rt *rapid.T) {
				r.settle(ctx)
				check()
			},
		})

		// A successor takes the messages not acknowledged.
		k, ok := saved()
		next := &modelFeed{}
		successor := newTestReceiver(kv, next)
		var redelivered []jetstream.Msg
		var want []syncbuffer.Key
		seen := map[syncbuffer.Key]bool{}
		for i, m := range msgs {
			if m.acked == 0 {
				redelivered = append(redelivered, m)
				for _, p := range carry[i] {
					if pk := keyOf(&p); (!ok || !pk.Less(k)) && !seen[pk] {
						seen[pk] = true
						want = append(want, pk)
					}
				}
			}
		}
		require.NoError(rt, successor.receiveAll(ctx, redelivered))
		var got []syncbuffer.Key
		for _, b := range next.batches {
			got = append(got, b.keys...)
		}
		require.Equal(rt, want, got, "the successor drops what comes before the frontier")

		// The server delivers again what failed; the instance releases
		// and finishes everything.
		for _, i := range failed {
			redeliver(i)
		}
		feed.released, feed.ok = syncbuffer.Key{Time: 21}, true
		for i, s := range states {
			if s == "in progress" {
				states[i] = "done"
				feed.batches[i].done(nil)
			}
		}
		r.settle(ctx)
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
	kv := &memoryKV{vals: map[string][]byte{}}
	feed := &modelFeed{}
	r := newTestReceiver(kv, feed)
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
	r.settle(ctx)
	require.Zero(t, first.acked+again.acked, "nothing acknowledged while the first is in progress")

	feed.released, feed.ok = keyOf(&b.Items[0].Particle), true
	feed.batches[0].done(nil)
	r.settle(ctx)
	require.Equal(t, 0, first.acked, "the first delivery is not acknowledged")
	require.Equal(t, 1, again.acked, "the newest delivery is, once")
	require.Empty(t, r.pending)
	require.Empty(t, r.bySeq)
	require.True(t, r.keep(&testMsg{seq: 7, data: data}), "a delivery after the acknowledgement is new")
}
