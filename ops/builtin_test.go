package ops_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func ptr(f float64) *float64 { return &f }

func TestThreshold(t *testing.T) {
	op := optest.Must(ops.NewThreshold(ops.ThresholdConfig{Field: "v", Above: ptr(10), Below: ptr(0), By: []string{"node"}}))
	in := []particle.Particle{
		optest.Reading(1, "a", 5), optest.Reading(2, "a", 11), optest.Reading(3, "b", 12), optest.Reading(4, "a", 12),
		optest.Reading(5, "a", -1), optest.Reading(6, "a", 3),
	}
	c := optest.Drive(t, op, in)
	var got []string
	for _, p := range c.Emitted {
		node, _ := p.Tag("node")
		state, _ := p.Field("state")
		got = append(got, node+":"+state.StringValue())
		name, _ := p.Tag("alert")
		assert.Equal(t, "threshold", name)
		assert.Equal(t, "alert", p.Measurement)
	}
	// a: fires at 11, stays firing at 12 and at -1 (below), back ok at 3.
	assert.Equal(t, []string{"a:firing", "b:firing", "a:ok"}, got)
	_, err := ops.NewThreshold(ops.ThresholdConfig{Field: "v"})
	assert.ErrorIs(t, err, ops.ErrInvalidConfig)
}

func TestRateOfChange(t *testing.T) {
	op := optest.Must(ops.NewRateOfChange(ops.RateConfig{Field: "v", Max: 1}))
	c := optest.Drive(t, op, []particle.Particle{
		optest.Reading(0, "a", 0), optest.Reading(10, "a", 5), optest.Reading(12, "a", 9), optest.Reading(12, "a", 100), optest.Reading(14, "a", 10),
	})
	require.Len(t, c.Emitted, 2)
	assert.Equal(t, 2.0, optest.Field(t, c.Emitted[0], "rate"))
	assert.Equal(t, int64(12e9), c.Emitted[0].Time)
	assert.Equal(t, 0.5, optest.Field(t, c.Emitted[1], "rate"))
}

func TestFilter(t *testing.T) {
	op := optest.Must(ops.NewFilter(ops.FilterConfig{
		TagPass:   map[string][]string{"node": {"1*"}},
		FieldDrop: []string{"int_*"},
	}))
	p := func(node string) particle.Particle {
		return particle.Particle{Measurement: "wsn", Tags: []particle.Tag{{Key: "node", Value: node}},
			Fields: []particle.Field{{Key: "int_temp", Value: particle.Float(1)}, {Key: "temperature", Value: particle.Float(2)}}}
	}
	c := optest.Drive(t, op, []particle.Particle{p("1"), p("2"), p("12")})
	require.Len(t, c.Emitted, 2)
	for _, e := range c.Emitted {
		assert.Equal(t, []particle.Field{{Key: "temperature", Value: particle.Float(2)}}, e.Fields)
	}
	_, err := ops.NewFilter(ops.FilterConfig{NamePass: []string{"["}})
	assert.ErrorIs(t, err, ops.ErrInvalidConfig)
}

func TestResample(t *testing.T) {
	in := []particle.Particle{optest.Reading(1, "a", 10), optest.Reading(4, "a", 40), optest.Reading(6, "a", 0)}
	tests := []struct {
		method string
		want   map[float64]float64
	}{
		{ops.ResampleLast, map[float64]float64{2: 10, 4: 40}},
		{ops.ResampleLinear, map[float64]float64{2: 20, 4: 40}},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			op := optest.Must(ops.NewResample(ops.ResampleConfig{Every: 2 * time.Second, Method: tt.method, By: []string{"node"}}))
			c := optest.Drive(t, op, in)
			got := map[float64]float64{}
			for _, p := range c.Emitted {
				got[float64(p.Time)/1e9] = optest.Field(t, p, "v")
			}
			// The point at 6 is on the last reading: emitted with it.
			tt.want[6] = 0
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAlign(t *testing.T) {
	for _, mode := range optest.Modes {
		t.Run(mode.Name, func(t *testing.T) {
			op := optest.Must(ops.NewAlign(ops.AlignConfig{Bucket: time.Minute, Sensor: []string{"node"}}))
			in := []particle.Particle{optest.Reading(1, "b", 1), optest.Reading(2, "a", 2), optest.Reading(30, "b", 3), optest.Reading(61, "a", 4)}
			for i := range in {
				in[i].Tags = append(in[i].Tags, particle.Tag{Key: "site", Value: "x"})
			}
			c := optest.DriveWith(t, &operation.Collector{Checkpoints: mode.Checkpoints}, op, in, optest.Every(len(in))...)
			require.Len(t, c.Emitted, 2)
			assert.Equal(t, []particle.Field{{Key: "a_v", Value: particle.Float(2)}, {Key: "b_v", Value: particle.Float(3)}}, c.Emitted[0].Fields)
			assert.Equal(t, []particle.Tag{{Key: "site", Value: "x"}}, c.Emitted[0].Tags)
			assert.Equal(t, int64(0), c.Emitted[0].Time)
			assert.Equal(t, int64(60e9), c.Emitted[1].Time)
			optest.RequireSettledOnce(t, c, 4)
		})
	}
}

// readULB parses a raw ULB "Library 1" file: "ms node seq int_temp
// int_voltage humidity temperature par tsr", decimal commas, and the 0xA0
// thousands separator of R3.
func readULB(t *testing.T, path string) []particle.Particle {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []particle.Particle
	names := []string{"int_temp", "int_voltage", "humidity", "temperature", "par", "tsr"}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Fields(strings.ReplaceAll(sc.Text(), "\xa0", ""))
		if len(cols) != 9 {
			continue
		}
		ms, err := strconv.ParseInt(cols[0], 10, 64)
		require.NoError(t, err)
		seq, err := strconv.ParseInt(cols[2], 10, 64)
		require.NoError(t, err)
		p := particle.Particle{Time: ms * 1e6, Measurement: "wsn", Tags: []particle.Tag{{Key: "node", Value: cols[1]}},
			Fields: []particle.Field{{Key: "seq", Value: particle.Int(seq)}}}
		for i, n := range names {
			x, err := strconv.ParseFloat(strings.ReplaceAll(cols[3+i], ",", "."), 64)
			require.NoError(t, err)
			p.Fields = append(p.Fields, particle.Field{Key: n, Value: particle.Float(x)})
		}
		out = append(out, p)
	}
	require.NoError(t, sc.Err())
	return out
}

// The ULB recording has real duplicate packets: same node and sequence,
// same values, up to half a second apart. R2.txt has 39 of them.
func TestDedupULB(t *testing.T) {
	in := readULB(t, "../testdata/datasets/ulb-library1-wsn/R2.txt")
	type id struct {
		node string
		seq  int64
	}
	seen := map[id]bool{}
	dups := 0
	for _, p := range in {
		node, _ := p.Tag("node")
		seq, _ := p.Field("seq")
		k := id{node, seq.IntValue()}
		if seen[k] {
			dups++
		}
		seen[k] = true
	}
	require.Equal(t, 39, dups)
	tests := []struct {
		name string
		cfg  ops.DedupConfig
	}{
		{"by node and seq", ops.DedupConfig{By: []string{"node", "seq"}}},
		{"exact copies", ops.DedupConfig{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := optest.Drive(t, optest.Must(ops.NewDedup(tt.cfg)), in)
			assert.Len(t, c.Emitted, len(in)-dups)
		})
	}
}
