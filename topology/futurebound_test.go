package topology_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// times is a source of one particle per event time, in the order given.
func times(ts ...time.Time) topology.Source {
	return topology.Retaining(func(_ context.Context, out topology.SourceEmitter) error {
		for i, t := range ts {
			if err := out.EmitTracked(particle.Particle{Time: t.UnixNano(), Measurement: "m"}, uint64(i)); err != nil {
				return err
			}
		}
		return nil
	})
}

// A wild timestamp ahead of a live stream clock is invalid: dead-lettered
// and counted, not the new maximum that would make the rest late. In a
// replay the sources judge wild timestamps against the recording (a long gap
// is no wild timestamp), so the engine lets them pass.
func TestFutureBound(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	wild := start.Add(48 * time.Hour)
	cases := []struct {
		name        string
		replay      bool
		wantInvalid uint64
		wantLate    uint64
		wantTimes   []time.Time
	}{
		{
			name:        "live",
			wantInvalid: 1,
			wantTimes:   []time.Time{start, start.Add(time.Second), start.Add(2 * time.Second)},
		},
		{
			// The wild timestamp is the source's high-water mark now, so
			// what follows it is late.
			name:      "replay",
			replay:    true,
			wantLate:  1,
			wantTimes: []time.Time{start, start.Add(time.Second), wild},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var dead connectortest.DeadLetters
			topo := newTopology(t, topology.Config{Wall: streamclock.NewFake(start), Replay: tc.replay, DeadLetters: &dead})
			topo.AddSource("src", topology.Single(times(start, start.Add(time.Second), wild, start.Add(2*time.Second))), topology.SourceConfig{})
			var rec recorder
			topo.AddBolt("sink", rec.factory(), topology.BoltConfig{Buffer: syncbuffer.Config{Window: time.Minute}}).Input("src", topology.Global())
			require.NoError(t, topo.Run(context.Background()))

			var got, want []int64
			for _, p := range rec.all() {
				got = append(got, p.Time)
			}
			for _, w := range tc.wantTimes {
				want = append(want, w.UnixNano())
			}
			assert.Equal(t, want, got)
			assert.Equal(t, tc.wantInvalid, topo.Stats("src").Invalid.Load(), "judged where it enters")
			assert.Equal(t, tc.wantLate, topo.Stats("sink").Late.Load())
			if tc.wantInvalid > 0 {
				require.Len(t, dead.All(), 1)
				assert.ErrorIs(t, dead.All()[0].Err, topology.ErrFutureTimestamp)
			}
		})
	}
}
