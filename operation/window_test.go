package operation_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

func mustStats(t *testing.T, cfg operation.StatsConfig) operation.Operation {
	t.Helper()
	op, err := operation.NewStats(cfg)
	require.NoError(t, err)
	return op
}

func TestStatsWindows(t *testing.T) {
	in := []particle.Particle{
		reading(1, "a", 1), reading(2, "b", 10), reading(4, "a", 3),
		reading(6, "a", 5), reading(7, "b", 20), reading(11, "a", 7),
	}
	type result struct {
		t    float64
		node string
		vals map[string]float64
	}
	tests := []struct {
		name string
		cfg  operation.StatsConfig
		want []result
	}{
		{"tumbling mean by node", operation.StatsConfig{Size: 5 * time.Second, By: []string{"node"}, Aggregates: []string{"mean", "count"}}, []result{
			{5, "a", map[string]float64{"v_mean": 2, "v_count": 2}},
			{5, "b", map[string]float64{"v_mean": 10, "v_count": 1}},
			{10, "a", map[string]float64{"v_mean": 5, "v_count": 1}},
			{10, "b", map[string]float64{"v_mean": 20, "v_count": 1}},
			{15, "a", map[string]float64{"v_mean": 7, "v_count": 1}},
		}},
		{"tumbling all nodes", operation.StatsConfig{Size: 10 * time.Second, Aggregates: []string{"min", "max", "sum", "p50"}}, []result{
			{10, "", map[string]float64{"v_min": 1, "v_max": 20, "v_sum": 39, "v_p50": 5}},
			{20, "", map[string]float64{"v_min": 7, "v_max": 7, "v_sum": 7, "v_p50": 7}},
		}},
		{"sliding", operation.StatsConfig{Size: 10 * time.Second, Slide: 5 * time.Second, Aggregates: []string{"count"}}, []result{
			{5, "", map[string]float64{"v_count": 3}},
			{10, "", map[string]float64{"v_count": 5}},
			{15, "", map[string]float64{"v_count": 3}},
			{20, "", map[string]float64{"v_count": 1}},
		}},
		{"session", operation.StatsConfig{Gap: 3 * time.Second, By: []string{"node"}, Aggregates: []string{"count"}}, []result{
			{4, "a", map[string]float64{"v_count": 1}},
			{5, "b", map[string]float64{"v_count": 1}},
			{9, "a", map[string]float64{"v_count": 2}},
			{10, "b", map[string]float64{"v_count": 1}},
			{14, "a", map[string]float64{"v_count": 1}},
		}},
		{"count", operation.StatsConfig{Count: 2, By: []string{"node"}, Aggregates: []string{"sum"}}, []result{
			{4, "a", map[string]float64{"v_sum": 4}},
			{7, "b", map[string]float64{"v_sum": 30}},
			{11, "a", map[string]float64{"v_sum": 12}},
		}},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				c := driveWith(t, &operation.Collector{Checkpoints: mode.checkpoints}, mustStats(t, tt.cfg), in, every(len(in))...)
				require.Len(t, c.Emitted, len(tt.want), "%v", c.Emitted)
				for i, w := range tt.want {
					got := c.Emitted[i]
					end := int64(w.t * 1e9)
					if tt.cfg.Count > 0 {
						end++ // count windows end just after their last particle
					}
					assert.Equal(t, end, got.Time, "result %d", i)
					node, _ := got.Tag("node")
					assert.Equal(t, w.node, node, "result %d", i)
					for k, v := range w.vals {
						assert.InDelta(t, v, field(t, got, k), 1e-9, "result %d %s", i, k)
					}
				}
				// Every particle was held and acknowledged exactly once.
				requireSettledOnce(t, c, len(in))
				assert.Empty(t, c.Failed)
			})
		}
	}
}

func TestStatsStddevAndPercentiles(t *testing.T) {
	var in []particle.Particle
	for i := 1; i <= 10; i++ {
		in = append(in, reading(float64(i)/10, "a", float64(i)))
	}
	c := drive(t, mustStats(t, operation.StatsConfig{Size: time.Minute, Aggregates: []string{"stddev", "p90", "p10", "median", "p100"}}), in)
	require.Len(t, c.Emitted, 1)
	r := c.Emitted[0]
	assert.InDelta(t, 3.0276503540974917, field(t, r, "v_stddev"), 1e-12) // sample stddev of 1..10
	assert.Equal(t, 9.0, field(t, r, "v_p90"))
	assert.Equal(t, 1.0, field(t, r, "v_p10"))
	assert.Equal(t, 5.0, field(t, r, "v_median"))
	assert.Equal(t, 10.0, field(t, r, "v_p100"))
}

func TestStatsConfigErrors(t *testing.T) {
	for _, cfg := range []operation.StatsConfig{
		{},
		{Size: time.Second, Gap: time.Second},
		{Size: time.Second, Slide: 2 * time.Second},
		{Size: -time.Second},
		{Size: time.Second, Aggregates: []string{"avg"}},
		{Size: time.Second, Aggregates: []string{"p101"}},
	} {
		_, err := operation.NewStats(cfg)
		assert.ErrorIs(t, err, operation.ErrInvalidConfig, "%+v", cfg)
		assert.ErrorIs(t, cfg.Validate(), operation.ErrInvalidConfig, "%+v", cfg)
	}
}

// Validate judges a configuration as its constructor does, defaults
// included, and leaves it as it was.
func TestValidateAppliesDefaultsToACopy(t *testing.T) {
	stats := operation.StatsConfig{Size: time.Minute}
	require.NoError(t, stats.Validate())
	assert.Zero(t, stats.Slide)
	_, err := operation.NewStats(stats)
	require.NoError(t, err)

	resample := operation.ResampleConfig{Every: time.Second}
	require.NoError(t, resample.Validate())
	assert.Empty(t, resample.Method)
	_, err = operation.NewResample(resample)
	require.NoError(t, err)
}

// A late particle passed through to a window that already closed is
// dropped and acknowledged, not emitted as a second result.
// A particle whose windows have closed (replayed, or late and passed
// through) is rejected, never acknowledged silently.
func TestWindowRejectsParticlesOfClosedWindows(t *testing.T) {
	ctx := context.Background()
	op := mustStats(t, operation.StatsConfig{Size: 10 * time.Second, Aggregates: []string{"count"}})
	c := &operation.Collector{}
	require.NoError(t, op.Process(ctx, reading(1, "a", 1), c))
	require.NoError(t, op.(operation.WatermarkHandler).OnWatermark(ctx, 12e9, c))
	require.Len(t, c.Emitted, 1)
	err := op.Process(ctx, reading(2, "a", 1), c)
	require.ErrorIs(t, err, operation.ErrWindowClosed)
	require.ErrorIs(t, err, operation.ErrRejected)
	require.NoError(t, op.(operation.Flusher).Flush(ctx, c))
	assert.Len(t, c.Emitted, 1)
	assert.Len(t, c.Acked, 1)
}

func TestBatchGivesParticlesInOrder(t *testing.T) {
	var got [][]float64
	op := operation.Batch(operation.Tumbling(5*time.Second), operation.ByTags("node"),
		func(_ context.Context, w operation.Window, key string, batch []particle.Particle, out operation.Emitter) error {
			var vs []float64
			for _, p := range batch {
				vs = append(vs, field(t, p, "v"))
			}
			got = append(got, vs)
			return nil
		})
	drive(t, op, []particle.Particle{reading(1, "a", 1), reading(2, "b", 2), reading(3, "a", 3), reading(6, "a", 4)}, 0, 1, 2, 3)
	assert.Equal(t, [][]float64{{1, 3}, {2}, {4}}, got)
	assert.Zero(t, op.Open())
}

// A failing result fails every input of the window it keeps, once.
func TestWindowResultErrorFailsInputs(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			op := operation.Batch(operation.Sliding(10*time.Second, 5*time.Second), nil,
				func(context.Context, operation.Window, string, []particle.Particle, operation.Emitter) error {
					return fmt.Errorf("boom")
				})
			c := &operation.Collector{Checkpoints: mode.checkpoints}
			ctx := context.Background()
			require.NoError(t, op.Process(ctx, reading(6, "a", 1), c))
			require.NoError(t, op.Process(ctx, reading(7, "a", 1), c))
			require.Error(t, op.OnWatermark(ctx, 11e9, c))
			// With checkpoints the windows keep the newest input's anchor
			// alone: the other is let go at once.
			failed := 2
			if mode.checkpoints {
				failed = 1
			}
			assert.Len(t, c.Failed, failed)
			requireSettledOnce(t, c, 2)
			require.Error(t, op.Flush(ctx, c))
			assert.Len(t, c.Failed, failed)
			requireSettledOnce(t, c, 2)
		})
	}
}

// Property: whatever the watermark rounds, tumbling windows by key give
// the same results as a plain computation, and every input is acked once.
func TestTumblingMatchesReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 60).Draw(rt, "n")
		size := time.Duration(rapid.IntRange(1, 20).Draw(rt, "size")) * time.Second
		var in []particle.Particle
		var ts int64
		for range n {
			ts += int64(rapid.IntRange(0, 7).Draw(rt, "dt")) * 1e9
			node := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(rt, "node")
			in = append(in, reading(float64(ts)/1e9, node, float64(rapid.IntRange(-50, 50).Draw(rt, "v"))))
		}
		rounds := rapid.SliceOfNDistinct(rapid.IntRange(0, max(n-1, 0)), 0, n, rapid.ID[int]).Draw(rt, "rounds")
		sort.Ints(rounds)

		op, err := operation.NewStats(operation.StatsConfig{Size: size, By: []string{"node"}, Aggregates: []string{"sum", "count"}})
		require.NoError(rt, err)
		checkpoints := rapid.Bool().Draw(rt, "checkpoints")
		c := driveWith(rt, &operation.Collector{Checkpoints: checkpoints}, op, in, rounds...)

		// The reference: sums per (window end, node), sorted by end then
		// first appearance.
		type key struct {
			end  int64
			node string
		}
		sums, counts := map[key]float64{}, map[key]int{}
		var order []key
		for _, p := range in {
			node, _ := p.Tag("node")
			k := key{(p.Time/int64(size) + 1) * int64(size), node}
			if _, ok := counts[k]; !ok {
				order = append(order, k)
			}
			v, _ := p.Field("v")
			sums[k] += v.FloatValue()
			counts[k]++
		}
		slices.SortStableFunc(order, func(a, b key) int { return int(min(max(a.end-b.end, -1), 1)) })
		require.Len(rt, c.Emitted, len(order))
		for i, k := range order {
			got := c.Emitted[i]
			node, _ := got.Tag("node")
			require.Equal(rt, k.end, got.Time)
			require.Equal(rt, k.node, node)
			s, _ := got.Field("v_sum")
			cnt, _ := got.Field("v_count")
			require.Equal(rt, sums[k], s.FloatValue())
			require.Equal(rt, int64(counts[k]), cnt.IntValue())
		}
		requireSettledOnce(rt, c, n)
		require.Empty(rt, c.Failed)
	})
}
