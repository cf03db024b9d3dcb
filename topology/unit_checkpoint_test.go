package topology_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// logTransport carries the edges into the instances of one bolt through
// logs that keep every batch until it is acknowledged, as a JetStream
// consumer does; the edges into the other bolts stay in process, but for
// those into the bolt flushed, whose log reports a batch durable only
// when flushed (edge.Flusher).
type logTransport struct {
	bolt      string
	flushed   string
	releaseAt int // batches a Run delivers before it releases its instance, once
	mu        sync.Mutex
	logs      []*batchLog
	flushing  []*batchLog
	// early counts the checkpoints of bolt's units that committed while
	// a batch sent to flushed before their cut was not durable, of
	// commits.
	early, commits int
}

func (lt *logTransport) Edge(bolt string, _ int) (edge.Outlet, edge.Inlet, bool) {
	if bolt != lt.bolt && bolt != lt.flushed {
		return nil, nil, false
	}
	l := &batchLog{releaseAt: lt.releaseAt, ready: make(chan struct{}, 1), lt: lt}
	lt.mu.Lock()
	if bolt == lt.bolt {
		lt.logs = append(lt.logs, l)
	} else {
		l.deferred = true
		lt.flushing = append(lt.flushing, l)
	}
	lt.mu.Unlock()
	return l, l, true
}

// downstream returns how many batches went to the logs of the bolt
// flushed, and how many of them are durable.
func (lt *logTransport) downstream() (sent, durable int) {
	lt.mu.Lock()
	logs := lt.flushing
	lt.mu.Unlock()
	for _, l := range logs {
		l.mu.Lock()
		sent, durable = sent+len(l.entries), durable+len(l.entries)-len(l.undone)
		l.mu.Unlock()
	}
	return sent, durable
}

// batchLog is one instance's log: an edge.Resumer that delivers, at every
// Run, the batches not acknowledged but those the restored checkpoint
// holds, and acknowledges a batch once it is done and a checkpoint after
// it committed.
type batchLog struct {
	releaseAt int
	ready     chan struct{}
	lt        *logTransport
	// deferred tells that a batch sent is durable only once flushed.
	deferred bool

	mu        sync.Mutex
	entries   []logEntry
	runs      int
	committed uint64 // the newest delivery number a committed checkpoint is after
	released  bool
	restored  int // Runs that resumed from a checkpoint
	// undone are the done callbacks of the batches sent and not flushed.
	undone []func(error)
	// cuts holds, per position taken, how many batches had gone to the
	// bolt flushed by then: all of them come before the cut.
	cuts map[string]int
}

type logEntry struct {
	b     edge.Batch
	order uint64 // delivery number in this Run, 0 if not delivered
	done  bool
	acked bool
}

func (l *batchLog) Send(_ context.Context, b *edge.Batch, done func(error)) error {
	c := *b
	c.Items = slices.Clone(b.Items)
	l.mu.Lock()
	l.entries = append(l.entries, logEntry{b: c})
	if l.deferred {
		l.undone = append(l.undone, done)
		done = nil
	}
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
	if done != nil {
		done(nil)
	}
	return nil
}

func (l *batchLog) Flush(context.Context) error {
	l.mu.Lock()
	undone := l.undone
	l.undone = nil
	l.mu.Unlock()
	for _, done := range undone {
		done(nil)
	}
	return nil
}

func (l *batchLog) Acquire(context.Context) error { return nil }

func (l *batchLog) End(context.Context) {}

func (l *batchLog) Position(delivered uint64) ([]byte, error) {
	sent, _ := l.lt.downstream()
	l.mu.Lock()
	defer l.mu.Unlock()
	pos := binary.AppendUvarint(nil, delivered)
	for i, e := range l.entries {
		if e.order != 0 && e.order <= delivered && !e.acked {
			pos = binary.AppendUvarint(pos, uint64(i))
		}
	}
	if !l.deferred {
		// Of a unit that sends to the bolt flushed; the logs of that
		// bolt's own units are what it sends to.
		if l.cuts == nil {
			l.cuts = map[string]int{}
		}
		l.cuts[string(pos)] = sent
	}
	return pos, nil
}

func (l *batchLog) Committed(pos []byte) {
	delivered, _ := binary.Uvarint(pos)
	_, durable := l.lt.downstream()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.deferred {
		l.lt.mu.Lock()
		l.lt.commits++
		if durable < l.cuts[string(pos)] {
			l.lt.early++
		}
		l.lt.mu.Unlock()
	}
	l.committed = max(l.committed, delivered)
	l.settleLocked()
}

// settleLocked acknowledges the batches done that a committed checkpoint
// is after.
func (l *batchLog) settleLocked() {
	for i := range l.entries {
		if e := &l.entries[i]; e.done && e.order != 0 && e.order <= l.committed {
			e.acked = true
		}
	}
}

func (l *batchLog) Resume(pos []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.committed = 0
	for i := range l.entries {
		l.entries[i].order, l.entries[i].done = 0, false
	}
	if pos == nil {
		return nil
	}
	l.restored++
	_, n := binary.Uvarint(pos)
	for pos = pos[n:]; len(pos) > 0; pos = pos[n:] {
		var i uint64
		i, n = binary.Uvarint(pos)
		if n <= 0 || i >= uint64(len(l.entries)) {
			return errors.New("batchLog: bad position")
		}
		// In the restored state: never delivered again.
		l.entries[i].acked = true
	}
	return nil
}

func (l *batchLog) Run(ctx context.Context, feed edge.Feed) error {
	l.mu.Lock()
	l.runs++
	l.mu.Unlock()
	var delivered uint64
	for {
		l.mu.Lock()
		next := -1
		for i, e := range l.entries {
			if !e.acked && e.order == 0 {
				next = i
				break
			}
		}
		if !l.released && delivered >= uint64(l.releaseAt) {
			if l.committed > 0 {
				l.released = true
				l.mu.Unlock()
				return edge.ErrReleased
			}
			// Until a checkpoint committed.
			next = -1
		}
		var b edge.Batch
		if next >= 0 {
			delivered++
			l.entries[next].order = delivered
			b = l.entries[next].b
			b.Items = slices.Clone(b.Items)
			b.Position = delivered
		}
		l.mu.Unlock()
		if next < 0 {
			select {
			case <-l.ready:
				continue
			case <-ctx.Done():
				return nil
			case <-time.After(time.Millisecond):
				// A checkpoint may have committed: time to release.
				continue
			}
		}
		order := delivered
		err := feed.Deliver(ctx, &b, func(err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if e := &l.entries[next]; err == nil && e.order == order {
				e.done = true
				l.settleLocked()
			}
		})
		if err != nil {
			return err
		}
	}
}

// identified gathers the lines a bolt receives by identity, and checks
// that a particle received twice is the same line.
type identified struct {
	mu     sync.Mutex
	lines  map[[2]uint64]string
	copies int
	differ []string
}

func (g *identified) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	line, err := particle.AppendLineProtocol(nil, &in, particle.Second)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	id := [2]uint64{uint64(in.Origin), in.Seq}
	if was, ok := g.lines[id]; ok {
		g.copies++
		if was != string(line) {
			g.differ = append(g.differ, fmt.Sprintf("%v: %q, then %q", id, was, line))
		}
		return nil
	}
	g.lines[id] = string(line)
	return nil
}

// A unit released in the middle of its input restores its newest
// checkpoint where it starts again and takes from its log only what came
// after it: its windows hold every input once, and the output is one run's
// without a transport, but for copies of results fired again, which keep
// their identities.
func TestUnitRestoresItsCheckpointWhenItStartsAgain(t *testing.T) {
	readings := make([]reading, 0, 3000)
	for i := range 3000 {
		readings = append(readings, reading{t: int64(1000 + i/3), key: string(rune('a' + i%3)), value: int64(i)})
	}
	var want gatherLines
	require.NoError(t, windowed(t, topology.Config{}, nil, 2, &stoppableSource{readings: readings, stopAt: -1}, &want).Run(context.Background()))
	slices.Sort(want.lines)
	require.Len(t, want.lines, 3*34)

	for _, releaseAt := range []int{1, 2, 5} {
		t.Run(fmt.Sprint("released after ", releaseAt), func(t *testing.T) {
			store, err := checkpoint.OpenDir(t.TempDir())
			require.NoError(t, err)
			tr := &logTransport{bolt: "window", releaseAt: releaseAt}
			cfg := topology.Config{Replay: true, Transport: tr, Acking: topology.AckingConfig{Enabled: true}}
			cfg.Checkpoints.Store, cfg.Checkpoints.Interval = store, time.Millisecond
			topo := newTopology(t, cfg)
			topo.AddSource("src", topology.Single(&stoppableSource{readings: readings, stopAt: -1}), topology.SourceConfig{})
			perKey := func() operation.Operation {
				return operation.Aggregate(operation.Tumbling(30*time.Second), operation.ByTags("k"), sumAgg{})
			}
			topo.AddBolt("window", perKey, topology.BoltConfig{Parallelism: 2}).Input("src", topology.Fields("k"))
			got := &identified{lines: map[[2]uint64]string{}}
			topo.AddBolt("out", operation.Stateless(got), topology.BoltConfig{}).Input("window", topology.Global())
			require.NoError(t, topo.Run(context.Background()))

			require.Empty(t, got.differ, "a result fired again is the same")
			lines := slices.Sorted(func(yield func(string) bool) {
				for _, l := range got.lines {
					if !yield(l) {
						return
					}
				}
			})
			require.Equal(t, want.lines, lines)
			for _, l := range tr.logs {
				l.mu.Lock()
				require.Equal(t, 2, l.runs, "released once, run again (%d batches)", len(l.entries))
				require.Equal(t, 1, l.restored, "the second run restored a checkpoint")
				for i, e := range l.entries {
					require.True(t, e.acked, "batch %d of %d acknowledged", i, len(l.entries))
				}
				l.mu.Unlock()
			}
		})
	}
}

// A unit's checkpoint commits only once what its instances sent out of
// the process before its cut is durable: the commit lets the Inlet forget
// the inputs before the cut, and a process killed right after it must not
// take what they produced with it.
func TestUnitCheckpointWaitsForItsOutputToBeDurable(t *testing.T) {
	readings := make([]reading, 0, 2000)
	for i := range 2000 {
		readings = append(readings, reading{t: int64(1000 + i/4), key: string(rune('a' + i%4)), value: int64(i)})
	}
	build := func(cfg topology.Config, out *gatherLines) *topology.Topology {
		topo := newTopology(t, cfg)
		topo.AddSource("src", topology.Single(&stoppableSource{readings: readings, stopAt: -1}), topology.SourceConfig{})
		topo.AddBolt("pass", operation.Stateless(operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
			out.Emit(in)
			return nil
		})), topology.BoltConfig{Parallelism: 2}).Input("src", topology.Fields("k"))
		topo.AddBolt("out", operation.Stateless(out), topology.BoltConfig{}).Input("pass", topology.Global())
		return topo
	}
	var want gatherLines
	require.NoError(t, build(topology.Config{Replay: true}, &want).Run(context.Background()))
	slices.Sort(want.lines)

	store, err := checkpoint.OpenDir(t.TempDir())
	require.NoError(t, err)
	tr := &logTransport{bolt: "pass", flushed: "out", releaseAt: math.MaxInt}
	cfg := topology.Config{Replay: true, Transport: tr, Acking: topology.AckingConfig{Enabled: true}}
	cfg.Checkpoints.Store, cfg.Checkpoints.Interval = store, time.Millisecond
	var got gatherLines
	require.NoError(t, build(cfg, &got).Run(context.Background()))
	slices.Sort(got.lines)
	require.Equal(t, want.lines, got.lines)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	require.NotZero(t, tr.commits)
	require.Zero(t, tr.early, "checkpoints committed before the output before their cut was durable (of %d)", tr.commits)
}
