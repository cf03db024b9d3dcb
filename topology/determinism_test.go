package topology_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
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

// run runs c under schedule s and returns the lines of the window stage and
// of the last stage.
func (c pipelineCase) run(t require.TestingT, s schedule) (windows, last []string) {
	cfg := topology.Config{Replay: true, BatchSize: s.batch, InboxSize: s.inbox}
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
	var win, out gatherLines
	topo.AddBolt("windows", operation.Stateless(&win), topology.BoltConfig{}).Input("perkey", topology.Global())
	lastFrom := "perkey"
	if c.stages == 3 {
		total := func() operation.Operation { return operation.Aggregate(operation.Tumbling(c.size), nil, sumAgg{}) }
		topo.AddBolt("total", total, topology.BoltConfig{}).Input("perkey", topology.Global())
		lastFrom = "total"
	}
	topo.AddBolt("out", operation.Stateless(&out), topology.BoltConfig{}).Input(lastFrom, topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	if lb != nil {
		lb.requireAllDone(t)
	}
	for _, name := range []string{"perkey", "windows", "total", "out"} {
		if st := topo.Stats(name); st != nil {
			require.Zero(t, st.Late.Load()+st.Behind.Load(), "late at %s: results in order are never late", name)
		}
	}
	return win.lines, out.lines
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
