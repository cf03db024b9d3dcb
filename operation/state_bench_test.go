package operation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// BenchmarkKeyedStateSnapshot measures snapshot and restore of 1M keyed
// states of the stateful operations other than windows (see
// BenchmarkWindowSnapshot): the series of a resample, the sensors of an
// alert, the identities a dedup remembers, the keys of a per-key manager
// (a counter each).
func BenchmarkKeyedStateSnapshot(b *testing.B) {
	const keys = 1_000_000
	seq := func(p particle.Particle, i int) particle.Particle {
		p.Fields = append(p.Fields, particle.Field{Key: "seq", Value: particle.Int(int64(i))})
		return p
	}
	for _, bc := range []struct {
		name  string
		newOp func() operation.Operation
	}{
		{"resample", func() operation.Operation {
			return must(operation.NewResample(operation.ResampleConfig{Every: time.Second, By: []string{"node"}}))
		}},
		{"rate-of-change", func() operation.Operation {
			return must(operation.NewRateOfChange(operation.RateConfig{Field: "v", Max: 1, By: []string{"node"}}))
		}},
		{"dedup", func() operation.Operation {
			return must(operation.NewDedup(operation.DedupConfig{By: []string{"node", "seq"}, Within: time.Hour}))
		}},
		{"per-key", operation.PerKey(operation.ByTags("node"), func() operation.Operation { return &snapCounter{} }, time.Hour)},
	} {
		op := bc.newOp()
		c := &countingEmitter{}
		for i := range keys {
			p := seq(reading(float64(i%60), fmt.Sprintf("sensor-%07d", i), float64(i)), i)
			if err := op.Process(context.Background(), p, c); err != nil {
				b.Fatal(err)
			}
		}
		var w state.Writer
		if err := op.(operation.Snapshotter).Snapshot(&w); err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name+"/snapshot", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				if err := op.(operation.Snapshotter).Snapshot(&w); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(w.Len()))
			b.ReportMetric(float64(w.Len())/keys, "B/state")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/state")
		})
		b.Run(bc.name+"/restore", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(w.Len()))
			for b.Loop() {
				if err := bc.newOp().(operation.Snapshotter).Restore(state.NewReader(w.Bytes())); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/state")
		})
	}
}
