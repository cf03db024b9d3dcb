package topology_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// reading is one particle of a recording in the determinism tests.
type reading struct {
	t     int64 // seconds
	key   string
	value int64
}

func (r reading) particle() particle.Particle {
	return particle.Particle{
		Time:        r.t * int64(time.Second),
		Measurement: "m",
		Tags:        []particle.Tag{{Key: "k", Value: r.key}},
		Fields:      []particle.Field{{Key: "v", Value: particle.Int(r.value)}},
	}
}

// pipelineCase is a recording per source and the pipeline's shape: the
// sources feed a pass-through bolt (fields grouping, window w1), whose
// output is counted and summed per key in tumbling windows (fields
// grouping), whose results are summed over keys in the same windows
// (global), stamped one window later.
type pipelineCase struct {
	sources  [][]reading
	par1     int
	par2     int
	w1       time.Duration
	size     time.Duration
	stages   int
	schedule []schedule
}

// schedule is one way of running the same case: batch and inbox sizes,
// how often the sources flush, and a seed for yields and delays.
type schedule struct {
	batch, inbox int
	flushEvery   int
	seed         uint64
	// remote sends every edge into a bolt through a Transport.
	remote bool
	// checkpoints is the interval between checkpoints, zero for none;
	// crashes are the numbers of particles after which the first source
	// fails and the run is started again from its last checkpoint.
	checkpoints time.Duration
	crashes     []int
}

func drawCase(t *rapid.T) pipelineCase {
	c := pipelineCase{
		par1:   rapid.IntRange(1, 4).Draw(t, "par1"),
		par2:   rapid.IntRange(1, 3).Draw(t, "par2"),
		w1:     time.Duration(rapid.IntRange(0, 5).Draw(t, "w1")) * time.Second,
		size:   time.Duration(rapid.IntRange(2, 10).Draw(t, "size")) * time.Second,
		stages: rapid.IntRange(2, 3).Draw(t, "stages"),
	}
	for i := range rapid.IntRange(1, 2).Draw(t, "sources") {
		n := rapid.IntRange(0, 150).Draw(t, fmt.Sprintf("n%d", i))
		var rs []reading
		base := int64(1000)
		for j := range n {
			base += rapid.Int64Range(0, 2).Draw(t, "step")
			// Most readings are within the window, some beyond it.
			back := rapid.Int64Range(0, 8).Draw(t, "back")
			if rapid.IntRange(0, 3).Draw(t, "jitter") != 0 {
				back = 0
			}
			key := rapid.SampledFrom([]string{"a", "b", "c", "d", "e"}).Draw(t, "key")
			rs = append(rs, reading{t: base - back, key: key, value: int64(j)})
		}
		c.sources = append(c.sources, rs)
	}
	c.schedule = []schedule{{batch: 256, inbox: 4}} // the defaults, unhurried
	for i := range 3 {
		c.schedule = append(c.schedule, schedule{
			batch:      rapid.SampledFrom([]int{1, 2, 7, 64}).Draw(t, "batch"),
			inbox:      rapid.IntRange(1, 4).Draw(t, "inbox"),
			flushEvery: rapid.IntRange(0, 5).Draw(t, "flush"),
			seed:       uint64(i) + 1,
			remote:     rapid.Bool().Draw(t, "remote"),
		})
	}
	// Checkpoints, and crashes restored from them, change nothing.
	total := len(c.sources[0])
	for i := range 2 {
		s := schedule{
			batch:       rapid.SampledFrom([]int{1, 7, 64}).Draw(t, "batch"),
			inbox:       rapid.IntRange(1, 4).Draw(t, "inbox"),
			seed:        uint64(i) + 10,
			checkpoints: time.Duration(rapid.IntRange(50, 1000).Draw(t, "checkpoints")) * time.Microsecond,
		}
		for range rapid.IntRange(0, min(total, 3)).Draw(t, "crashes") {
			s.crashes = append(s.crashes, rapid.IntRange(0, total-1).Draw(t, "crash"))
		}
		c.schedule = append(c.schedule, s)
	}
	return c
}

// sumAgg counts and sums v per window, stamping results at the window's
// end.
type sumAgg struct{}

type sumAcc struct {
	key      string
	n, total int64
}

func (sumAgg) New() sumAcc { return sumAcc{} }

func (sumAgg) Add(acc sumAcc, p *particle.Particle) (sumAcc, error) {
	acc.key, _ = p.Tag("k")
	for _, f := range p.Fields {
		switch f.Key {
		case "v":
			acc.n++
			acc.total += f.Value.IntValue()
		case "n":
			acc.n += f.Value.IntValue()
		case "sum":
			acc.total += f.Value.IntValue()
		}
	}
	return acc, nil
}

func (sumAgg) ResultTime(w operation.Window) int64 { return w.End }

func (sumAgg) Result(_ context.Context, w operation.Window, key string, acc sumAcc, out operation.Emitter) error {
	tags := []particle.Tag{{Key: "k", Value: key}}
	if key == "" {
		tags = nil
	}
	out.Emit(particle.Particle{Time: w.End, Measurement: "sum", Tags: tags, Fields: []particle.Field{
		{Key: "n", Value: particle.Int(acc.n)}, {Key: "sum", Value: particle.Int(acc.total)},
	}})
	return nil
}

// gatherLines records what reaches a sink as line protocol, in order.
type gatherLines struct {
	mu    sync.Mutex
	lines []string
}

func (g *gatherLines) Process(_ context.Context, in particle.Particle, _ operation.Emitter) error {
	line, err := particle.AppendLineProtocol(nil, &in, particle.Second)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = append(g.lines, string(line))
	return nil
}

func (g *gatherLines) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = nil
}

// Snapshot implements operation.Snapshotter: a sink's commit is how many
// lines it holds.
func (g *gatherLines) Snapshot(w *state.Writer) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	w.PutUvarint(uint64(len(g.lines)))
	return nil
}

// Restore implements operation.Snapshotter: what came after the
// checkpoint is cut, and written again.
func (g *gatherLines) Restore(r *state.Reader) error {
	n := int(r.ReadUvarint())
	if err := r.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if n > len(g.lines) {
		return fmt.Errorf("restore of %d lines, %d written", n, len(g.lines))
	}
	g.lines = g.lines[:n]
	return nil
}

// EncodeState implements state.Codec.
func (sumAgg) EncodeState(w *state.Writer, acc sumAcc) error {
	w.PutString(acc.key)
	w.PutVarint(acc.n)
	w.PutVarint(acc.total)
	return nil
}

// DecodeState implements state.Codec.
func (sumAgg) DecodeState(r *state.Reader) (sumAcc, error) {
	acc := sumAcc{key: r.ReadString(), n: r.ReadVarint(), total: r.ReadVarint()}
	return acc, r.Err()
}

// run runs c under schedule s and returns the lines of the window stage and
// of the last stage. With crashes, it runs c once per crash, each run
// restoring the last checkpoint of the one before.
func (c pipelineCase) run(t require.TestingT, s schedule) (windows, last []string) {
	var win, out gatherLines
	var store checkpoint.Store
	if s.checkpoints > 0 {
		dir, err := os.MkdirTemp("", "checkpoints")
		require.NoError(t, err)
		defer os.RemoveAll(dir)
		store, err = checkpoint.OpenDir(dir)
		require.NoError(t, err)
	}
	for _, crash := range s.crashes {
		err := c.runOnce(t, s, store, crash, &win, &out)
		require.ErrorIs(t, err, errCrash)
	}
	require.NoError(t, c.runOnce(t, s, store, -1, &win, &out))
	return win.lines, out.lines
}

// errCrash is the failure of a source that crashes a run.
var errCrash = errors.New("crash")

// runOnce runs c once under schedule s, its sinks adding to win and out.
// With crash ≥ 0 the first source fails after emitting crash particles.
func (c pipelineCase) runOnce(t require.TestingT, s schedule, store checkpoint.Store, crash int, win, out *gatherLines) error {
	cfg := topology.Config{Replay: true, BatchSize: s.batch, InboxSize: s.inbox}
	cfg.Checkpoints.Store, cfg.Checkpoints.Interval = store, s.checkpoints
	if store != nil {
		// A sink that restores nothing starts afresh, as a file sink
		// truncates its file.
		if _, err := checkpoint.Latest(context.Background(), store); errors.Is(err, checkpoint.ErrNotFound) {
			win.reset()
			out.reset()
		}
	}
	var lb *loopback
	if s.remote {
		lb = newLoopback()
		cfg.Transport, cfg.Acking.Enabled = lb, true
	}
	topo, err := topology.New(cfg)
	require.NoError(t, err)
	var names []string
	for i, rs := range c.sources {
		name := fmt.Sprintf("src%d", i)
		names = append(names, name)
		rng := rand.New(rand.NewPCG(s.seed, uint64(i)))
		topo.AddSource(name, topology.Single(topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
			for j, r := range rs {
				if i == 0 && j == crash {
					return errCrash
				}
				if err := out.Emit(r.particle()); err != nil {
					return err
				}
				if s.flushEvery > 0 && j%s.flushEvery == 0 {
					if err := out.Flush(); err != nil {
						return err
					}
				}
				if s.seed != 0 && rng.IntN(4) == 0 {
					runtime.Gosched()
				}
				if s.checkpoints > 0 && j%8 == 7 {
					// Time for checkpoints to be taken in the middle.
					time.Sleep(s.checkpoints)
				}
			}
			return nil
		})), topology.SourceConfig{})
	}
	pass := func() operation.Operation {
		rng := rand.New(rand.NewPCG(s.seed, 99))
		return operation.Func(func(_ context.Context, in particle.Particle, out operation.Emitter) error {
			if s.seed != 0 && rng.IntN(16) == 0 {
				time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
			}
			out.Emit(in)
			return nil
		})
	}
	b := topo.AddBolt("pass", pass, topology.BoltConfig{Parallelism: c.par1, Buffer: syncbuffer.Config{Window: c.w1}})
	for _, n := range names {
		b.Input(n, topology.Fields("k"))
	}
	perKey := func() operation.Operation {
		return operation.Aggregate(operation.Tumbling(c.size), operation.ByTags("k"), sumAgg{})
	}
	topo.AddBolt("perkey", perKey, topology.BoltConfig{Parallelism: c.par2}).Input("pass", topology.Fields("k"))
	topo.AddBolt("windows", operation.Stateless(win), topology.BoltConfig{}).Input("perkey", topology.Global())
	lastFrom := "perkey"
	if c.stages == 3 {
		total := func() operation.Operation { return operation.Aggregate(operation.Tumbling(c.size), nil, sumAgg{}) }
		topo.AddBolt("total", total, topology.BoltConfig{}).Input("perkey", topology.Global())
		lastFrom = "total"
	}
	topo.AddBolt("out", operation.Stateless(out), topology.BoltConfig{}).Input(lastFrom, topology.Global())
	if err := topo.Run(context.Background()); err != nil {
		return err
	}
	if lb != nil {
		lb.requireAllDone(t)
	}
	for _, name := range []string{"perkey", "windows", "total", "out"} {
		if st := topo.Stats(name); st != nil {
			require.Zero(t, st.Late.Load()+st.Behind.Load(), "late at %s: results in order are never late", name)
		}
	}
	return nil
}

// model computes what the pipeline must give: lateness per source, judged
// against the source's own high-water mark, then windows over what is left.
func (c pipelineCase) model() (windows, last []string) {
	type wk struct {
		end int64
		key string
	}
	size := int64(c.size / time.Second)
	perKey := map[wk][2]int64{}
	for _, rs := range c.sources {
		high := int64(-1 << 62)
		for _, r := range rs {
			high = max(high, r.t)
			if r.t < high-int64(c.w1/time.Second) {
				continue // late
			}
			k := wk{end: (r.t/size + 1) * size, key: r.key}
			v := perKey[k]
			perKey[k] = [2]int64{v[0] + 1, v[1] + r.value}
		}
	}
	keys := make([]wk, 0, len(perKey))
	for k := range perKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b wk) int {
		if a.end != b.end {
			return int(a.end - b.end)
		}
		return 0
	})
	totals := map[int64][2]int64{}
	for _, k := range keys {
		v := perKey[k]
		windows = append(windows, fmt.Sprintf("sum,k=%s n=%di,sum=%di %d\n", k.key, v[0], v[1], k.end))
		t := totals[k.end+size]
		totals[k.end+size] = [2]int64{t[0] + v[0], t[1] + v[1]}
	}
	if c.stages == 2 {
		return windows, windows
	}
	ends := make([]int64, 0, len(totals))
	for e := range totals {
		ends = append(ends, e)
	}
	slices.Sort(ends)
	for _, e := range ends {
		v := totals[e]
		last = append(last, fmt.Sprintf("sum n=%di,sum=%di %d\n", v[0], v[1], e))
	}
	return windows, last
}

// sortedCopy sorts lines, for comparing with the model regardless of the
// order of results with equal times (their order follows the instances'
// numbers, which depend on the parallelism).
func sortedCopy(lines []string) []string {
	s := slices.Clone(lines)
	slices.Sort(s)
	return s
}

// The output of a pipeline over recordings is a function of the data: the
// same, line for line, whatever the batch sizes, inbox sizes, flushes and
// scheduling, and equal to a reference model that applies lateness per
// source and then windows.
func TestOutputIsAFunctionOfTheData(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawCase(rt)
		wantWindows, wantLast := c.model()
		var firstWindows, firstLast []string
		for i, s := range c.schedule {
			windows, last := c.run(rt, s)
			require.Equal(rt, sortedCopy(wantWindows), sortedCopy(windows), "window results, schedule %+v", s)
			require.Equal(rt, sortedCopy(wantLast), sortedCopy(last), "last stage, schedule %+v", s)
			if i == 0 {
				firstWindows, firstLast = windows, last
				continue
			}
			require.Equal(rt, firstWindows, windows, "order of window results, schedule %+v", s)
			require.Equal(rt, firstLast, last, "order of the last stage, schedule %+v", s)
		}
	})
}
