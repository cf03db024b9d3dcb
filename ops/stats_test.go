package ops_test

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
)

func mustStats(t *testing.T, cfg ops.StatsConfig) operation.Operation {
	t.Helper()
	op, err := ops.NewStats(cfg)
	require.NoError(t, err)
	return op
}

func TestStatsWindows(t *testing.T) {
	in := []particle.Particle{
		optest.Reading(1, "a", 1), optest.Reading(2, "b", 10), optest.Reading(4, "a", 3),
		optest.Reading(6, "a", 5), optest.Reading(7, "b", 20), optest.Reading(11, "a", 7),
	}
	type result struct {
		t    float64
		node string
		vals map[string]float64
	}
	tests := []struct {
		name string
		cfg  ops.StatsConfig
		want []result
	}{
		{"tumbling mean by node", ops.StatsConfig{Size: 5 * time.Second, By: []string{"node"}, Aggregates: []string{"mean", "count"}}, []result{
			{5, "a", map[string]float64{"v_mean": 2, "v_count": 2}},
			{5, "b", map[string]float64{"v_mean": 10, "v_count": 1}},
			{10, "a", map[string]float64{"v_mean": 5, "v_count": 1}},
			{10, "b", map[string]float64{"v_mean": 20, "v_count": 1}},
			{15, "a", map[string]float64{"v_mean": 7, "v_count": 1}},
		}},
		{"tumbling all nodes", ops.StatsConfig{Size: 10 * time.Second, Aggregates: []string{"min", "max", "sum", "p50"}}, []result{
			{10, "", map[string]float64{"v_min": 1, "v_max": 20, "v_sum": 39, "v_p50": 5}},
			{20, "", map[string]float64{"v_min": 7, "v_max": 7, "v_sum": 7, "v_p50": 7}},
		}},
		{"sliding", ops.StatsConfig{Size: 10 * time.Second, Slide: 5 * time.Second, Aggregates: []string{"count"}}, []result{
			{5, "", map[string]float64{"v_count": 3}},
			{10, "", map[string]float64{"v_count": 5}},
			{15, "", map[string]float64{"v_count": 3}},
			{20, "", map[string]float64{"v_count": 1}},
		}},
		{"session", ops.StatsConfig{Gap: 3 * time.Second, By: []string{"node"}, Aggregates: []string{"count"}}, []result{
			{4, "a", map[string]float64{"v_count": 1}},
			{5, "b", map[string]float64{"v_count": 1}},
			{9, "a", map[string]float64{"v_count": 2}},
			{10, "b", map[string]float64{"v_count": 1}},
			{14, "a", map[string]float64{"v_count": 1}},
		}},
		{"count", ops.StatsConfig{Count: 2, By: []string{"node"}, Aggregates: []string{"sum"}}, []result{
			{4, "a", map[string]float64{"v_sum": 4}},
			{7, "b", map[string]float64{"v_sum": 30}},
			{11, "a", map[string]float64{"v_sum": 12}},
		}},
	}
	for _, tt := range tests {
		for _, mode := range optest.Modes {
			t.Run(tt.name+"/"+mode.Name, func(t *testing.T) {
				c := optest.DriveWith(t, &operation.Collector{Checkpoints: mode.Checkpoints}, mustStats(t, tt.cfg), in, optest.Every(len(in))...)
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
						assert.InDelta(t, v, optest.Field(t, got, k), 1e-9, "result %d %s", i, k)
					}
				}
				// Every particle was held and acknowledged exactly once.
				optest.RequireSettledOnce(t, c, len(in))
				assert.Empty(t, c.Failed)
			})
		}
	}
}

func TestStatsStddevAndPercentiles(t *testing.T) {
	var in []particle.Particle
	for i := 1; i <= 10; i++ {
		in = append(in, optest.Reading(float64(i)/10, "a", float64(i)))
	}
	c := optest.Drive(t, mustStats(t, ops.StatsConfig{Size: time.Minute, Aggregates: []string{"stddev", "p90", "p10", "median", "p100"}}), in)
	require.Len(t, c.Emitted, 1)
	r := c.Emitted[0]
	assert.InDelta(t, 3.0276503540974917, optest.Field(t, r, "v_stddev"), 1e-12) // sample stddev of 1..10
	assert.Equal(t, 9.0, optest.Field(t, r, "v_p90"))
	assert.Equal(t, 1.0, optest.Field(t, r, "v_p10"))
	assert.Equal(t, 5.0, optest.Field(t, r, "v_median"))
	assert.Equal(t, 10.0, optest.Field(t, r, "v_p100"))
}

func TestStatsConfigErrors(t *testing.T) {
	for _, cfg := range []ops.StatsConfig{
		{},
		{Size: time.Second, Gap: time.Second},
		{Size: time.Second, Slide: 2 * time.Second},
		{Size: -time.Second},
		{Size: time.Second, Aggregates: []string{"avg"}},
		{Size: time.Second, Aggregates: []string{"p101"}},
	} {
		_, err := ops.NewStats(cfg)
		assert.ErrorIs(t, err, ops.ErrInvalidConfig, "%+v", cfg)
		assert.ErrorIs(t, cfg.Validate(), ops.ErrInvalidConfig, "%+v", cfg)
	}
}

// Validate judges a configuration as its constructor does, defaults
// included, and leaves it as it was.
func TestValidateAppliesDefaultsToACopy(t *testing.T) {
	stats := ops.StatsConfig{Size: time.Minute}
	require.NoError(t, stats.Validate())
	assert.Zero(t, stats.Slide)
	_, err := ops.NewStats(stats)
	require.NoError(t, err)

	resample := ops.ResampleConfig{Every: time.Second}
	require.NoError(t, resample.Validate())
	assert.Empty(t, resample.Method)
	_, err = ops.NewResample(resample)
	require.NoError(t, err)
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
			in = append(in, optest.Reading(float64(ts)/1e9, node, float64(rapid.IntRange(-50, 50).Draw(rt, "v"))))
		}
		rounds := rapid.SliceOfNDistinct(rapid.IntRange(0, max(n-1, 0)), 0, n, rapid.ID[int]).Draw(rt, "rounds")
		sort.Ints(rounds)

		op, err := ops.NewStats(ops.StatsConfig{Size: size, By: []string{"node"}, Aggregates: []string{"sum", "count"}})
		require.NoError(rt, err)
		checkpoints := rapid.Bool().Draw(rt, "checkpoints")
		c := optest.DriveWith(rt, &operation.Collector{Checkpoints: checkpoints}, op, in, rounds...)

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
		optest.RequireSettledOnce(rt, c, n)
		require.Empty(rt, c.Failed)
	})
}
