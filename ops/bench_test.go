package ops_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/particle"
)

// BenchmarkStats measures a ten-second window's mean, max and p95 per
// node over 100 nodes reading once a second, watermark every 100
// particles.
func BenchmarkStats(b *testing.B) {
	op := optest.Must(ops.NewStats(ops.StatsConfig{Size: 10 * time.Second, By: []string{"node"}, Aggregates: []string{"mean", "max", "p95"}}))
	wm := op.(operation.WatermarkHandler)
	ctx := context.Background()
	out := &optest.CountingEmitter{}
	nodes := make([]particle.Particle, 100)
	for i := range nodes {
		nodes[i] = optest.Reading(0, strconv.Itoa(i), float64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p := nodes[i%len(nodes)]
		p.Time = int64(i/len(nodes)) * int64(time.Second)
		_ = op.Process(ctx, p, out)
		if i%100 == 99 {
			_ = wm.OnWatermark(ctx, p.Time, out)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "particles/s")
}

// BenchmarkDedup measures dedup by node and sequence.
func BenchmarkDedup(b *testing.B) {
	op := optest.Must(ops.NewDedup(ops.DedupConfig{By: []string{"node", "seq"}}))
	ctx := context.Background()
	out := &optest.CountingEmitter{}
	p := optest.Reading(0, "7", 1)
	p.Fields = append(p.Fields, particle.Field{Key: "seq", Value: particle.Int(0)})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p.Time = int64(i) * int64(time.Millisecond)
		p.Fields[1].Value = particle.Int(int64(i / 2)) // every reading twice
		_ = op.Process(ctx, p, out)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "particles/s")
}
