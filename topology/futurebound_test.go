package topology_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// times is a source of one particle per event time, in the order given.
func times(ts ...time.Time) topology.Source {
	return topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
		for i, t := range ts {
			if err := out.Emit(particle.Particle{Time: t.UnixNano(), Measurement: "m"}, i); err != nil {
				return err
			}
		}
		return nil
	})
}

// A wild timestamp ahead of a live stream clock is invalid: dead-lettered
// and counted, not the new maximum that would make the rest late. An
// unpaced replay's clock is the data's own time, so there a long gap in the
// recording is no wild timestamp.
func TestFutureBound(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	wild := start.Add(48 * time.Hour)
	cases := []struct {
		name        string
		clock       topology.ClockConfig
		wantInvalid uint64
		wantTimes   []time.Time
	}{
		{
			name:        "live",
			wantInvalid: 1,
			wantTimes:   []time.Time{start, start.Add(time.Second), start.Add(2 * time.Second)},
		},
		{
			name:      "unpaced replay",
			clock:     topology.ClockConfig{Replay: true, Speed: streamclock.Unpaced},
			wantTimes: []time.Time{start, start.Add(time.Second), start.Add(2 * time.Second), wild},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var dead deadLetters
			topo := newTopology(t, topology.Config{Wall: streamclock.NewFake(start), Clock: tc.clock, DeadLetters: &dead})
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
			assert.Equal(t, tc.wantInvalid, topo.Stats("sink").Invalid.Load())
			assert.Zero(t, topo.Stats("sink").Late.Load())
			if tc.wantInvalid > 0 {
				require.Len(t, dead.all(), 1)
				assert.ErrorIs(t, dead.all()[0].Err, topology.ErrFutureTimestamp)
			}
		})
	}
}
