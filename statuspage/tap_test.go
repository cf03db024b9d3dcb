package statuspage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/statuspage"
	"github.com/sensorstorm/sensorstorm/topology"
)

func TestTapSamplesOnlyWhileWatched(t *testing.T) {
	tap := statuspage.NewTap(statuspage.TapConfig{})
	tap.Offer(reading(1, "a", 20))
	require.Empty(t, tap.Snapshot().Series, "no one watches: nothing kept")
	release := tap.Watch()
	tap.Offer(reading(2, "a", 21))
	release()
	release()
	tap.Offer(reading(3, "a", 22))
	s := tap.Snapshot().Series
	require.Len(t, s, 1)
	require.Equal(t, "wsn,node=a", s[0].Key)
	require.Equal(t, []statuspage.Point{{T: 2000, V: []float64{21}}}, s[0].Points)
}

func TestTapBounds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    statuspage.TapConfig
		offer  func(tap *statuspage.Tap)
		series []string
		points map[string]int
		fields map[string][]string
		unfoll uint64
	}{
		{
			name: "series beyond MaxSeries are counted only",
			cfg:  statuspage.TapConfig{MaxSeries: 2},
			offer: func(tap *statuspage.Tap) {
				for _, n := range []string{"b", "a", "c", "a", "d"} {
					tap.Offer(reading(1, n, 1))
				}
			},
			series: []string{"wsn,node=a", "wsn,node=b"},
			points: map[string]int{"wsn,node=a": 2, "wsn,node=b": 1},
			unfoll: 2,
		},
		{
			name: "a series keeps its History newest points",
			cfg:  statuspage.TapConfig{History: 3, PointsPerTick: 100},
			offer: func(tap *statuspage.Tap) {
				for i := range 10 {
					tap.Offer(reading(int64(i), "a", float64(i)))
				}
			},
			series: []string{"wsn,node=a"},
			points: map[string]int{"wsn,node=a": 3},
		},
		{
			name: "numeric fields only, the first MaxFields",
			cfg:  statuspage.TapConfig{MaxFields: 2},
			offer: func(tap *statuspage.Tap) {
				tap.Offer(&particle.Particle{Measurement: "m", Fields: []particle.Field{
					{Key: "s", Value: particle.String("x")}, {Key: "i", Value: particle.Int(3)},
					{Key: "b", Value: particle.Bool(true)}, {Key: "f", Value: particle.Float(1)},
				}})
			},
			series: []string{"m"},
			points: map[string]int{"m": 1},
			fields: map[string][]string{"m": {"i", "b"}},
		},
		{
			name: "meta particles are not readings",
			offer: func(tap *statuspage.Tap) {
				tap.Offer(&particle.Particle{Measurement: "m", Meta: testMeta{}})
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tap := statuspage.NewTap(tc.cfg)
			defer tap.Watch()()
			tc.offer(tap)
			snap := tap.Snapshot()
			var keys []string
			for _, s := range snap.Series {
				keys = append(keys, s.Key)
				require.Len(t, s.Points, tc.points[s.Key], s.Key)
				if f, ok := tc.fields[s.Key]; ok {
					require.Equal(t, f, s.Fields)
				}
			}
			require.Equal(t, tc.series, keys)
			require.Equal(t, tc.unfoll, snap.Unfollowed)
		})
	}
}

type testMeta struct{}

func (testMeta) MetaType() string { return "test" }

func TestPointsEncodeMissingValuesAsNull(t *testing.T) {
	tap := statuspage.NewTap(statuspage.TapConfig{})
	defer tap.Watch()()
	p := reading(1, "a", 20.5)
	tap.Offer(p)
	p = reading(2, "a", 0)
	p.Fields = []particle.Field{{Key: "humidity", Value: particle.Float(40)}}
	tap.Offer(p)
	b, err := json.Marshal(tap.Snapshot().Series[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"key":"wsn,node=a","fields":["temperature","humidity"],"points":[[1000,20.5,null],[2000,null,40]],"marks":[]}`, string(b))
	var back statuspage.Series
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, math.IsNaN(back.Points[0].V[1]))
	require.Equal(t, 40.0, back.Points[1].V[1])
}

func TestDeadLettersAreCountedAndMarked(t *testing.T) {
	tap := statuspage.NewTap(statuspage.TapConfig{})
	var handed []string
	sink := tap.DeadLetters(topology.DeadLetterFunc(func(_ context.Context, d topology.DeadLetter) {
		handed = append(handed, d.Reason)
	}))
	ctx := context.Background()
	sink.DeadLetter(ctx, topology.DeadLetter{Component: "src", Reason: "invalid", Raw: []byte("bad")})
	release := tap.Watch()
	sink.DeadLetter(ctx, topology.DeadLetter{Component: "out", Reason: "late", Particle: reading(5, "a", 1)})
	release()
	sink.DeadLetter(ctx, topology.DeadLetter{Component: "out", Reason: "late", Particle: reading(6, "a", 1)})
	snap := tap.Snapshot()
	require.Equal(t, map[string]uint64{"src": 1, "out": 2}, snap.DeadLetters, "counted, watched or not")
	require.Equal(t, []statuspage.Mark{{T: 5000, Reason: "late"}}, snap.Series[0].Marks, "marked while watched")
	require.Empty(t, snap.Series[0].Points)
	require.Equal(t, []string{"invalid", "late", "late"}, handed)
}

// ackSource is a source that wants acks.
type ackSource struct {
	topology.SourceFunc
	acked []uint64
}

func (s *ackSource) Ack(id uint64)                    { s.acked = append(s.acked, id) }
func (s *ackSource) Fail(uint64, acker.Reason, error) {}
func (s *ackSource) Redeliver(uint64) (particle.Particle, error) {
	return particle.Particle{}, errors.New("not kept")
}

// batchAckSource is an ackSource that takes acknowledgements in batches.
type batchAckSource struct{ *ackSource }

func (s *batchAckSource) AckBatch(ids []uint64) { s.acked = append(s.acked, ids...) }

func TestTappedSourcesOfferWhatTheyEmitAndStayAcknowledgers(t *testing.T) {
	tap := statuspage.NewTap(statuspage.TapConfig{})
	defer tap.Watch()()
	plain := topology.SourceFunc(func(_ context.Context, out topology.SourceEmitter) error {
		return out.Emit(*reading(1, "plain", 1))
	})
	acking := &ackSource{SourceFunc: func(_ context.Context, out topology.SourceEmitter) error {
		return out.EmitTracked(*reading(1, "acking", 2), 7)
	}}
	topo, err := topology.New(topology.Config{Acking: topology.AckingConfig{Enabled: true}})
	require.NoError(t, err)
	topo.AddSource("plain", tap.Source(topology.Single(plain)), topology.SourceConfig{})
	topo.AddSource("acking", tap.Source(topology.Single(acking)), topology.SourceConfig{})
	_, isAck := tap.Source(topology.Single(plain))(0).(topology.Acknowledger)
	require.False(t, isAck, "a source that did not want acks gets none")
	_, isBatch := tap.Source(topology.Single(acking))(0).(topology.BatchAcknowledger)
	require.False(t, isBatch, "a source that takes acks one at a time gets them so")
	batched := tap.Source(topology.Single(&batchAckSource{acking}))(0).(topology.BatchAcknowledger)
	batched.AckBatch([]uint64{3, 4})
	require.Equal(t, []uint64{3, 4}, acking.acked, "a source that takes acks in batches gets them so")
	acking.acked = nil
	topo.AddBolt("out", nopFactory(), topology.BoltConfig{}).Input("plain", topology.Global()).Input("acking", topology.Global())
	require.NoError(t, topo.Run(context.Background()))
	var keys []string
	for _, s := range tap.Snapshot().Series {
		keys = append(keys, s.Key)
	}
	require.Equal(t, []string{"wsn,node=acking", "wsn,node=plain"}, keys)
	require.Equal(t, []uint64{7}, acking.acked)
}

func TestANilTapWrapsNothing(t *testing.T) {
	var tap *statuspage.Tap
	var next topology.DeadLetterSink = topology.DeadLetterFunc(func(context.Context, topology.DeadLetter) {})
	require.Equal(t, fmt.Sprint(next), fmt.Sprint(tap.DeadLetters(next)))
	src := topology.SourceFunc(func(context.Context, topology.SourceEmitter) error { return errors.New("x") })
	require.EqualError(t, tap.Source(topology.Single(src))(0).Run(context.Background(), nil), "x")
}

// TestTapMatchesAModel offers random particles between random ticks and
// compares what the tap keeps with a model: per series, a point is taken
// when fewer than PointsPerTick were taken since the last tick, and the
// newest History are kept.
func TestTapMatchesAModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := statuspage.TapConfig{
			MaxSeries:     rapid.IntRange(1, 4).Draw(t, "maxSeries"),
			PointsPerTick: rapid.IntRange(1, 4).Draw(t, "pointsPerTick"),
			History:       rapid.IntRange(1, 6).Draw(t, "history"),
		}
		tap := statuspage.NewTap(cfg)
		defer tap.Watch()()
		taken := map[string]int{}
		kept := map[string][]int64{}
		var order []string
		var unfollowed uint64
		for i, op := range rapid.SliceOfN(rapid.IntRange(-1, 5), 0, 80).Draw(t, "ops") {
			if op < 0 {
				tap.Tick()
				taken = map[string]int{}
				continue
			}
			node := fmt.Sprint(op)
			tap.Offer(reading(int64(i), node, float64(i)))
			key := "wsn,node=" + node
			if _, ok := kept[key]; !ok {
				if len(order) == cfg.MaxSeries {
					unfollowed++
					continue
				}
				order = append(order, key)
				kept[key] = []int64{}
			}
			if taken[key] == cfg.PointsPerTick {
				continue
			}
			taken[key]++
			kept[key] = append(kept[key], int64(i)*1000)
			if len(kept[key]) > cfg.History {
				kept[key] = kept[key][1:]
			}
		}
		snap := tap.Snapshot()
		require.Equal(t, unfollowed, snap.Unfollowed)
		got := map[string][]int64{}
		for _, s := range snap.Series {
			got[s.Key] = []int64{}
			for _, p := range s.Points {
				got[s.Key] = append(got[s.Key], p.T)
			}
		}
		require.Equal(t, kept, got)
	})
}

// BenchmarkTapOffer measures what a particle costs at a tapped source,
// with no page open and with one.
func BenchmarkTapOffer(b *testing.B) {
	ps := make([]*particle.Particle, 19)
	for i := range ps {
		ps[i] = reading(int64(i), fmt.Sprint(i+1), 21.5)
		ps[i].Tags = append([]particle.Tag{{Key: "deployment", Value: "library1"}}, ps[i].Tags...)
	}
	for _, watched := range []bool{false, true} {
		b.Run(fmt.Sprintf("watched=%t", watched), func(b *testing.B) {
			tap := statuspage.NewTap(statuspage.TapConfig{})
			if watched {
				defer tap.Watch()()
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tap.Offer(ps[i%len(ps)])
				i++
				if i%100_000 == 0 {
					tap.Tick()
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "particles/s")
		})
	}
}

func nopFactory() operation.Factory {
	return operation.Stateless(operation.Func(func(context.Context, particle.Particle, operation.Emitter) error { return nil }))
}
