// Package optest drives operations in the tests of packages operation
// and ops as a bolt instance would: particles, watermarks, ticks and meta
// particles, the end of the stream, and snapshots restored into a new
// operation that must go on as if never interrupted.
//
// # What it is not
//
// Not the engine (package topology runs operations) and not public: it
// exists for the tests of this module.
package optest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// TB is what Drive needs of *testing.T and *rapid.T.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
}

// Reading returns a particle of sensor node with field v at t seconds.
func Reading(t float64, node string, v float64) particle.Particle {
	return particle.Particle{
		Time: int64(t * 1e9), Measurement: "m",
		Tags:   []particle.Tag{{Key: "node", Value: node}},
		Fields: []particle.Field{{Key: "v", Value: particle.Float(v)}},
	}
}

// Drive runs op over in like a bolt instance would, announcing the
// watermark after the particles at the indexes in rounds (and after the
// last), then the end of the stream.
func Drive(t TB, op operation.Operation, in []particle.Particle, rounds ...int) *operation.Collector {
	t.Helper()
	return DriveWith(t, &operation.Collector{}, op, in, rounds...)
}

// Modes are the two ways the engine holds inputs: an anchor per input,
// or operation.Checkpointed when the run takes checkpoints.
var Modes = []struct {
	Name        string
	Checkpoints bool
}{{"acks", false}, {"checkpoints", true}}

// RequireSettledOnce requires that each of the n inputs c numbered as it
// held them was acknowledged or failed exactly once, by the operation:
// with checkpoints too, where the engine acknowledges it at a checkpoint
// and the operation's Ack lets go of the anchor.
func RequireSettledOnce(t TB, c *operation.Collector, n int) {
	t.Helper()
	seen := map[operation.Anchor]int{}
	for _, a := range c.Acked {
		seen[a&^operation.CheckpointedAnchor]++
	}
	for a := range c.Failed {
		seen[a&^operation.CheckpointedAnchor]++
	}
	for a := operation.Anchor(1); a <= operation.Anchor(n); a++ {
		require.Equal(t, 1, seen[a], "input %d settled %d times", a, seen[a])
	}
	require.Len(t, seen, n, "anchors settled: %v", seen)
}

// DriveWith is Drive recording into c.
func DriveWith(t TB, c *operation.Collector, op operation.Operation, in []particle.Particle, rounds ...int) *operation.Collector {
	t.Helper()
	ctx := context.Background()
	wm, _ := op.(operation.WatermarkHandler)
	next := 0
	for i, p := range in {
		require.NoError(t, op.Process(ctx, p, c))
		if wm != nil && (next < len(rounds) && rounds[next] == i) {
			next++
			require.NoError(t, wm.OnWatermark(ctx, p.Time, c))
		}
	}
	if wm != nil {
		require.NoError(t, wm.OnWatermark(ctx, math.MaxInt64, c))
	}
	if f, ok := op.(operation.Flusher); ok {
		require.NoError(t, f.Flush(ctx, c))
	}
	return c
}

// Every returns the indexes 0..n-1: one watermark round per particle.
func Every(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// Field returns the value of p's field key as a number, failing t if p
// has none.
func Field(t TB, p particle.Particle, key string) float64 {
	t.Helper()
	v, ok := p.Field(key)
	require.Truef(t, ok, "field %s missing in %v", key, p)
	x, _ := v.Number()
	return x
}

// InputKind is what an operation is given: a particle, a watermark, a
// stream-clock tick or a meta particle.
type InputKind uint8

// The kinds of inputs.
const (
	InParticle InputKind = iota
	InWatermark
	InTick
	InMeta
)

// Input is one thing an operation is given, as a bolt instance gives it.
type Input struct {
	Kind InputKind
	P    particle.Particle // a data or meta particle
	T    int64             // a watermark or the stream clock's time
}

// Player gives inputs to an operation and records everything it does:
// what it emits, acks and fails, each call's error and, after each
// watermark, its output hold.
type Player struct {
	Op    operation.Operation
	Out   *operation.Collector
	errs  []string
	holds []int64
}

// NewPlayer returns a Player of op, whose Collector returns checkpointed
// anchors when checkpoints is set.
func NewPlayer(op operation.Operation, checkpoints bool) *Player {
	return &Player{Op: op, Out: &operation.Collector{Checkpoints: checkpoints}}
}

// Play gives ins to pl's operation, recording each call's error and,
// after each watermark, its output hold.
func (pl *Player) Play(ins []Input) {
	ctx := context.Background()
	for _, in := range ins {
		var err error
		switch in.Kind {
		case InParticle:
			err = pl.Op.Process(ctx, in.P, pl.Out)
		case InWatermark:
			if h, ok := pl.Op.(operation.WatermarkHandler); ok {
				err = h.OnWatermark(ctx, in.T, pl.Out)
			}
			if h, ok := pl.Op.(operation.OutputHolder); ok {
				pl.holds = append(pl.holds, h.OutputHold(in.T))
			}
		case InTick:
			if h, ok := pl.Op.(operation.TickHandler); ok {
				err = h.OnTick(ctx, in.T, pl.Out)
			}
		case InMeta:
			if h, ok := pl.Op.(operation.MetaHandler); ok {
				err = h.HandleMeta(ctx, in.P, pl.Out)
			}
		}
		pl.record(err)
	}
}

func (pl *Player) record(err error) {
	if err != nil {
		pl.errs = append(pl.errs, err.Error())
	} else {
		pl.errs = append(pl.errs, "")
	}
}

// Finish ends the stream as the engine does: the last watermark, then
// Flush.
func (pl *Player) Finish() {
	pl.Play([]Input{{Kind: InWatermark, T: math.MaxInt64}})
	if f, ok := pl.Op.(operation.Flusher); ok {
		pl.record(f.Flush(context.Background(), pl.Out))
	}
}

// Fork returns a Player of op that has recorded what pl has.
func (pl *Player) Fork(op operation.Operation) *Player {
	out := *pl.Out
	out.Emitted = slices.Clone(out.Emitted)
	out.Acked = slices.Clone(out.Acked)
	out.Failed = maps.Clone(out.Failed)
	return &Player{Op: op, Out: &out, errs: slices.Clone(pl.errs), holds: slices.Clone(pl.holds)}
}

// RequireSame requires that pl and o emitted the same particles, returned
// the same errors and held the same output; with settled, that they acked
// and failed the same anchors too.
func (pl *Player) RequireSame(t TB, o *Player, what string, settled bool) {
	t.Helper()
	require.Equal(t, pl.errs, o.errs, "%s: errors", what)
	require.Equal(t, pl.holds, o.holds, "%s: output holds", what)
	require.Equal(t, Canon(pl.Out.Emitted), Canon(o.Out.Emitted), "%s: emitted", what)
	if settled {
		require.Equal(t, pl.Out.Acked, o.Out.Acked, "%s: acked", what)
		require.Equal(t, fmt.Sprint(pl.Out.Failed), fmt.Sprint(o.Out.Failed), "%s: failed", what)
	}
}

// Canon returns ps with no empty tags or fields, which are nil: the
// engine and every sink treat the two alike.
func Canon(ps []particle.Particle) []particle.Particle {
	c := make([]particle.Particle, len(ps))
	for i, p := range ps {
		if len(p.Tags) == 0 {
			p.Tags = nil
		}
		if len(p.Fields) == 0 {
			p.Fields = nil
		}
		c[i] = p
	}
	return c
}

// RoundTrip requires that an operation of newOp given ins[:cut],
// snapshotted, restored into another and given ins[cut:] does what one
// given ins uninterrupted does, and that the first, snapshotted and given
// ins[cut:] too, does the same, and that none settles an anchor twice.
// With checkpoints, Hold returns checkpointed anchors. It returns the
// snapshot and the number of particles emitted.
func RoundTrip(t TB, newOp func() operation.Operation, ins []Input, cut int, checkpoints bool) ([]byte, int) {
	t.Helper()
	whole := NewPlayer(newOp(), checkpoints)
	whole.Play(ins)
	whole.Finish()

	orig := NewPlayer(newOp(), checkpoints)
	orig.Play(ins[:cut])
	var w state.Writer
	require.NoError(t, orig.Op.(operation.Snapshotter).Snapshot(&w))
	snap := bytes.Clone(w.Bytes())
	restored := orig.Fork(newOp())
	r := state.NewReader(snap)
	require.NoError(t, restored.Op.(operation.Snapshotter).Restore(r))
	require.Zero(t, r.Len(), "bytes left after Restore")
	w.Reset()
	require.NoError(t, restored.Op.(operation.Snapshotter).Snapshot(&w))
	require.Equal(t, snap, w.Bytes(), "the restored operation's snapshot differs")

	orig.Play(ins[cut:])
	orig.Finish()
	restored.Play(ins[cut:])
	restored.Finish()
	whole.RequireSame(t, orig, "snapshotted", true)
	// Without checkpoints the inputs held before the cut are not in the
	// snapshot; with them, the anchors an operation keeps for its
	// results' identities are, and it lets go of them as before.
	whole.RequireSame(t, restored, "restored", checkpoints)
	for _, pl := range []*Player{whole, orig, restored} {
		settled := map[operation.Anchor]bool{}
		for _, a := range pl.Out.Acked {
			require.False(t, settled[a], "anchor %x settled twice", a)
			settled[a] = true
		}
		for a := range pl.Out.Failed {
			require.False(t, settled[a], "anchor %x settled twice", a)
			settled[a] = true
		}
	}
	return snap, len(whole.Out.Emitted)
}

// RequirePrefixesFail requires that Restore of every prefix of snap fails,
// without a panic: of every one for a small snapshot, of about 2000 spread
// over it and its last 64 for a large one.
func RequirePrefixesFail(t TB, newOp func() operation.Operation, snap []byte) {
	t.Helper()
	step := max(1, len(snap)/2000)
	for i := 0; i < len(snap); i++ {
		if i%step != 0 && i < len(snap)-64 {
			continue
		}
		err := newOp().(operation.Snapshotter).Restore(state.NewReader(snap[:i]))
		require.Error(t, err, "Restore of the first %d of %d bytes", i, len(snap))
	}
}

// Nodes are the sensors of generated inputs.
var Nodes = []string{"n0", "n1", "n2", "n3"}

// Inputs returns inputs in roughly event-time order, as a bolt
// instance releases them: readings of four Nodes, each with a sequence
// number (some without v, some with a string field), now and then a
// repeated packet or a Reading a little late; watermarks behind the
// latest Reading; stream-clock ticks; and stream-time ticks as meta
// particles.
func Inputs() *rapid.Generator[[]Input] {
	return rapid.Custom(func(t *rapid.T) []Input {
		n := rapid.IntRange(0, 80).Draw(t, "n")
		var (
			ins               []Input
			sent              []particle.Particle
			clock, stream, wm int64
			seq               = map[string]int64{}
		)
		for range n {
			switch rapid.IntRange(0, 11).Draw(t, "input") {
			case 0, 1:
				wm = max(wm, clock-int64(rapid.IntRange(0, 4).Draw(t, "wm lag"))*5e8)
				ins = append(ins, Input{Kind: InWatermark, T: wm})
			case 2:
				stream += int64(rapid.IntRange(0, 6).Draw(t, "tick")) * 5e8
				ins = append(ins, Input{Kind: InTick, T: stream})
			case 3:
				ins = append(ins, Input{Kind: InMeta, P: metaparticle.New(clock, metaparticle.Tick{Domain: metaparticle.StreamTime})})
			case 4:
				if len(sent) > 0 {
					p := sent[rapid.IntRange(0, len(sent)-1).Draw(t, "repeat")]
					if rapid.Bool().Draw(t, "later copy") {
						p.Time = clock
					}
					ins = append(ins, Input{Kind: InParticle, P: p})
				}
			default:
				clock += int64(rapid.IntRange(0, 6).Draw(t, "dt")) * 25e7
				node := rapid.SampledFrom(Nodes).Draw(t, "node")
				seq[node]++
				p := particle.Particle{
					Time:        clock - int64(rapid.IntRange(0, 1).Draw(t, "late"))*int64(rapid.IntRange(0, 8).Draw(t, "lateness"))*25e7,
					Measurement: "m", Tags: []particle.Tag{{Key: "node", Value: node}},
					Fields: []particle.Field{{Key: "seq", Value: particle.Int(seq[node])}},
					Origin: 1, Seq: uint64(len(sent) + 1),
				}
				if rapid.IntRange(0, 7).Draw(t, "no v") > 0 {
					p.Fields = append(p.Fields, particle.Field{Key: "v", Value: particle.Float(float64(rapid.IntRange(-20, 20).Draw(t, "v")))})
				}
				if rapid.IntRange(0, 7).Draw(t, "string") == 0 {
					p.Fields = append(p.Fields, particle.Field{Key: "s", Value: particle.String(rapid.StringN(0, 3, 3).Draw(t, "s"))})
				}
				sent = append(sent, p)
				ins = append(ins, Input{Kind: InParticle, P: p})
			}
		}
		return ins
	})
}

// OpCase is a Factory of one configuration of an operation.
type OpCase struct {
	Name string
	New  func() operation.Operation
}

// Seconds returns durations from lo to hi half-seconds.
func Seconds(lo, hi int, label string) *rapid.Generator[time.Duration] {
	return rapid.Custom(func(t *rapid.T) time.Duration {
		return time.Duration(rapid.IntRange(lo, hi).Draw(t, label)) * time.Second / 2
	})
}

// Must returns v, panicking on err: for constructors given a valid
// configuration.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ReadRecording returns the particles of the line-protocol file path.
func ReadRecording(t TB, path string) []particle.Particle {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec, err := particle.NewDecoder(f, path, particle.DecoderConfig{})
	require.NoError(t, err)
	var all []particle.Particle
	for {
		var p particle.Particle
		err := dec.Decode(&p)
		if err == io.EOF {
			return all
		}
		require.NoError(t, err)
		all = append(all, p.Clone())
	}
}

// RecordedInputs returns the recording as a bolt instance would get it:
// every 50 readings a watermark 5 s behind the latest and a tick of the
// stream clock, which runs with event time; every 500 a stream-time tick
// as a meta particle.
func RecordedInputs(t TB, path string) []Input {
	t.Helper()
	var ins []Input
	latest := int64(math.MinInt64)
	for i, p := range ReadRecording(t, path) {
		ins = append(ins, Input{Kind: InParticle, P: p})
		latest = max(latest, p.Time)
		if i%50 == 49 {
			ins = append(ins, Input{Kind: InWatermark, T: latest - 5e9}, Input{Kind: InTick, T: latest})
		}
		if i%500 == 499 {
			ins = append(ins, Input{Kind: InMeta, P: metaparticle.New(latest, metaparticle.Tick{Domain: metaparticle.StreamTime})})
		}
	}
	return ins
}

// SeedOf returns the snapshot of op after a few readings.
func SeedOf(t TB, op OpCase) []byte {
	var ins []Input
	for i := range 12 {
		p := Reading(float64(i)/2, Nodes[i%3], float64(i*i%11))
		p.Fields = append(p.Fields, particle.Field{Key: "seq", Value: particle.Int(int64(i / 2))})
		ins = append(ins, Input{Kind: InParticle, P: p}, Input{Kind: InTick, T: p.Time})
	}
	pl := NewPlayer(op.New(), true)
	pl.Play(ins)
	var w state.Writer
	require.NoError(t, pl.Op.(operation.Snapshotter).Snapshot(&w))
	return w.Bytes()
}

// FuzzOne restores in into each of ops.
func FuzzOne(t TB, ops []OpCase, in []byte) {
	for _, op := range ops {
		pl := NewPlayer(op.New(), true)
		err := pl.Op.(operation.Snapshotter).Restore(state.NewReader(in))
		if err != nil {
			var de *state.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%s: error %v is no DecodeError", op.Name, err)
			}
			continue
		}
		var w state.Writer
		if err := pl.Op.(operation.Snapshotter).Snapshot(&w); err != nil {
			t.Fatalf("%s: snapshot of a restored state: %v", op.Name, err)
		}
		pl.Play([]Input{{Kind: InTick, T: math.MaxInt64}})
		pl.Finish()
	}
}

// OrPerKey returns a generator of the operations of inner and, one time in
// four, of per-key managers of them, keyed by node.
func OrPerKey(inner *rapid.Generator[OpCase]) *rapid.Generator[OpCase] {
	return rapid.Custom(func(t *rapid.T) OpCase {
		if rapid.IntRange(0, 3).Draw(t, "per key") == 0 {
			op := inner.Draw(t, "inner")
			ttl := rapid.SampledFrom([]time.Duration{0, 2 * time.Second, 10 * time.Second}).Draw(t, "ttl")
			return OpCase{Name: "per key " + op.Name, New: operation.PerKey(operation.ByTags("node"), op.New, ttl)}
		}
		return inner.Draw(t, "op")
	})
}

// CheckSnapshots checks the snapshots of operations: that one drawn from
// generated, given generated inputs, snapshotted at any point of its input
// and restored into a new one goes on as if never interrupted (see
// RoundTrip), and that every prefix of its snapshot fails to restore; and
// that each of recorded over the recording at path does the same at a few
// points of it.
func CheckSnapshots(t *testing.T, generated *rapid.Generator[OpCase], path string, recorded []OpCase) {
	t.Run("round trips", func(t *testing.T) { checkRoundTrips(t, generated) })
	t.Run("prefixes fail", func(t *testing.T) { checkPrefixesFail(t, generated) })
	t.Run("recording", func(t *testing.T) { checkRecording(t, path, recorded) })
}

// checkRoundTrips checks, for operations drawn from ops given generated
// inputs, that one snapshotted at any point of its input and restored
// into a new one goes on as if never interrupted (see RoundTrip).
func checkRoundTrips(t *testing.T, ops *rapid.Generator[OpCase]) {
	rapid.Check(t, func(t *rapid.T) {
		op := ops.Draw(t, "op")
		ins := Inputs().Draw(t, "inputs")
		cut := rapid.IntRange(0, len(ins)).Draw(t, "cut")
		RoundTrip(t, op.New, ins, cut, rapid.Bool().Draw(t, "checkpoints"))
	})
}

// checkPrefixesFail checks, for operations drawn from ops given generated
// inputs, that every prefix of their snapshot fails to restore.
func checkPrefixesFail(t *testing.T, ops *rapid.Generator[OpCase]) {
	rapid.Check(t, func(t *rapid.T) {
		op := ops.Draw(t, "op")
		pl := NewPlayer(op.New(), true)
		pl.Play(Inputs().Draw(t, "inputs"))
		var w state.Writer
		require.NoError(t, pl.Op.(operation.Snapshotter).Snapshot(&w))
		RequirePrefixesFail(t, op.New, w.Bytes())
	})
}

// checkRecording checks that each of ops over the recording at path,
// snapshotted at a few points and restored, gives the output of the
// uninterrupted run, and that every prefix of its snapshot in the middle
// of the recording fails to restore.
func checkRecording(t *testing.T, path string, ops []OpCase) {
	ins := RecordedInputs(t, path)
	cuts := []int{1, len(ins) / 3, len(ins) / 2, len(ins) - 1}
	for _, op := range ops {
		t.Run(op.Name, func(t *testing.T) {
			for i, cut := range cuts {
				snap, emitted := RoundTrip(t, op.New, ins, cut, i%2 == 1)
				require.NotZero(t, emitted)
				if cut == len(ins)/2 {
					RequirePrefixesFail(t, op.New, snap)
					t.Logf("snapshot in the middle: %d bytes; %d particles emitted", len(snap), emitted)
				}
			}
		})
	}
}

// FuzzRestore restores bad bytes into each of ops, seeded with their
// snapshots after a few readings (see FuzzOne).
func FuzzRestore(f *testing.F, ops []OpCase) {
	for _, op := range ops {
		f.Add(SeedOf(f, op))
	}
	f.Fuzz(func(t *testing.T, in []byte) { FuzzOne(t, ops, in) })
}

// RequireMismatch requires that an operation of to refuses, with an error
// wrapping operation.ErrStateMismatch, the snapshot of one of from given
// a reading.
func RequireMismatch(t TB, from, to func() operation.Operation) {
	t.Helper()
	pl := NewPlayer(from(), false)
	pl.Play([]Input{{Kind: InParticle, P: Reading(1, "a", 3)}})
	var w state.Writer
	require.NoError(t, pl.Op.(operation.Snapshotter).Snapshot(&w))
	err := to().(operation.Snapshotter).Restore(state.NewReader(w.Bytes()))
	require.ErrorIs(t, err, operation.ErrStateMismatch)
}

// CountingEmitter counts emits and keeps nothing.
type CountingEmitter struct{ N int }

// Emit counts p.
func (e *CountingEmitter) Emit(particle.Particle) { e.N++ }

// Hold returns 0.
func (e *CountingEmitter) Hold() operation.Anchor { return 0 }

// EmitAnchored counts p.
func (e *CountingEmitter) EmitAnchored(particle.Particle, ...operation.Anchor) { e.N++ }

// Ack does nothing.
func (e *CountingEmitter) Ack(operation.Anchor) {}

// Fail does nothing.
func (e *CountingEmitter) Fail(operation.Anchor, error) {}

// BenchmarkSnapshots measures snapshot and restore of each operation of
// ops given a reading of each of keys sensors, with a field seq.
func BenchmarkSnapshots(b *testing.B, keys int, ops []OpCase) {
	seq := func(p particle.Particle, i int) particle.Particle {
		p.Fields = append(p.Fields, particle.Field{Key: "seq", Value: particle.Int(int64(i))})
		return p
	}
	for _, bc := range ops {
		op := bc.New()
		c := &CountingEmitter{}
		for i := range keys {
			p := seq(Reading(float64(i%60), fmt.Sprintf("sensor-%07d", i), float64(i)), i)
			if err := op.Process(context.Background(), p, c); err != nil {
				b.Fatal(err)
			}
		}
		var w state.Writer
		if err := op.(operation.Snapshotter).Snapshot(&w); err != nil {
			b.Fatal(err)
		}
		b.Run(bc.Name+"/snapshot", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				if err := op.(operation.Snapshotter).Snapshot(&w); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(w.Len()))
			b.ReportMetric(float64(w.Len())/float64(keys), "B/state")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/state")
		})
		b.Run(bc.Name+"/restore", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(w.Len()))
			for b.Loop() {
				if err := bc.New().(operation.Snapshotter).Restore(state.NewReader(w.Bytes())); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/state")
		})
	}
}

// Gather is a sink operation that keeps what it receives, safe for the
// concurrent use of several bolt instances.
type Gather struct {
	mu  sync.Mutex
	out []particle.Particle
}

// Process keeps a copy of in.
func (g *Gather) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.out = append(g.out, in.Clone())
	return nil
}

// Particles returns what g received, in the order it did.
func (g *Gather) Particles() []particle.Particle {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.out)
}

// Lines returns what g received in line protocol, sorted.
func (g *Gather) Lines(t TB) []string {
	t.Helper()
	var lines []string
	for _, p := range g.Particles() {
		b, err := particle.AppendLineProtocol(nil, &p, particle.Nanosecond)
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	slices.Sort(lines)
	return lines
}
