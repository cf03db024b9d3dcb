package ops_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
	"github.com/sensorstorm/sensorstorm/state"
)

// innerGen returns every built-in stateful operation, configured at
// random.
func innerGen() *rapid.Generator[optest.OpCase] {
	by := func(t *rapid.T, label string) []string {
		return rapid.SampledFrom([][]string{nil, {"node"}}).Draw(t, label)
	}
	return rapid.Custom(func(t *rapid.T) optest.OpCase {
		switch rapid.IntRange(0, 6).Draw(t, "kind") {
		case 0, 1:
			cfg := ops.StatsConfig{Size: time.Second, By: []string{"node"}, Aggregates: []string{"mean", "min", "max", "count", "stddev", "p90"}}
			return optest.OpCase{Name: "stats", New: func() operation.Operation { return optest.Must(ops.NewStats(cfg)) }}
		case 2:
			cfg := ops.AlignConfig{Bucket: optest.Seconds(1, 10, "bucket").Draw(t, "bucket"), Sensor: []string{"node"}}
			return optest.OpCase{Name: "align", New: func() operation.Operation { return optest.Must(ops.NewAlign(cfg)) }}
		case 3:
			cfg := ops.DedupConfig{By: rapid.SampledFrom([][]string{nil, {"node", "seq"}}).Draw(t, "by"), Within: optest.Seconds(0, 20, "within").Draw(t, "within")}
			return optest.OpCase{Name: "dedup", New: func() operation.Operation { return optest.Must(ops.NewDedup(cfg)) }}
		case 4:
			cfg := ops.ResampleConfig{
				Every:  optest.Seconds(1, 6, "every").Draw(t, "every"),
				Method: rapid.SampledFrom([]string{ops.ResampleLast, ops.ResampleLinear}).Draw(t, "method"),
				By:     by(t, "by"), MaxGap: optest.Seconds(0, 8, "max gap").Draw(t, "max gap"),
				Fields: rapid.SampledFrom([][]string{nil, {"v"}}).Draw(t, "fields"),
			}
			return optest.OpCase{Name: "resample", New: func() operation.Operation { return optest.Must(ops.NewResample(cfg)) }}
		case 5:
			above := float64(rapid.IntRange(-5, 15).Draw(t, "above"))
			cfg := ops.ThresholdConfig{Field: "v", Above: &above, By: by(t, "by")}
			if rapid.Bool().Draw(t, "below") {
				cfg.Below = ptr(above - float64(rapid.IntRange(1, 20).Draw(t, "below")))
			}
			return optest.OpCase{Name: "threshold", New: func() operation.Operation { return optest.Must(ops.NewThreshold(cfg)) }}
		}
		cfg := ops.RateConfig{Field: "v", Max: float64(rapid.IntRange(1, 40).Draw(t, "max")), By: by(t, "by")}
		return optest.OpCase{Name: "rate of change", New: func() operation.Operation { return optest.Must(ops.NewRateOfChange(cfg)) }}
	})
}

// Every built-in stateful operation, snapshotted at any point of its input and
// restored into a new operation of the same Factory, goes on as if never
// interrupted, and no prefix of its snapshot restores: over generated
// inputs and over the recording.
func TestSnapshots(t *testing.T) {
	optest.CheckSnapshots(t, optest.OrPerKey(innerGen()), recording, recordedOps())
}

// FuzzOperationRestore restores bad bytes into every built-in stateful operation:
// an error, never a panic, and what was restored snapshots again and
// ends its stream without one.
func FuzzOperationRestore(f *testing.F) { optest.FuzzRestore(f, fuzzOps()) }

// recordedOps are the built-in stateful operations as a pipeline over the
// recording would configure them.
func recordedOps() []optest.OpCase {
	byNode := []string{"node"}
	stats := func(cfg ops.StatsConfig) func() operation.Operation {
		return func() operation.Operation { return optest.Must(ops.NewStats(cfg)) }
	}
	return []optest.OpCase{
		{Name: "sliding statistics", New: stats(ops.StatsConfig{Size: 10 * time.Minute, Slide: 5 * time.Minute, By: byNode,
			Fields: []string{"temperature", "humidity"}, Aggregates: []string{"mean", "min", "max", "count", "stddev", "p95"}})},
		{Name: "session statistics", New: stats(ops.StatsConfig{Gap: time.Minute, By: byNode, Fields: []string{"temperature"}, Aggregates: []string{"mean", "count"}})},
		{Name: "count statistics", New: stats(ops.StatsConfig{Count: 25, By: byNode, Fields: []string{"par"}, Aggregates: []string{"sum"}})},
		{Name: "align", New: func() operation.Operation {
			return optest.Must(ops.NewAlign(ops.AlignConfig{Bucket: 10 * time.Minute, Sensor: byNode, Fields: []string{"temperature"}}))
		}},
		{Name: "dedup", New: func() operation.Operation {
			return optest.Must(ops.NewDedup(ops.DedupConfig{By: []string{"node", "seq"}, Within: 10 * time.Minute}))
		}},
		{Name: "resample", New: func() operation.Operation {
			return optest.Must(ops.NewResample(ops.ResampleConfig{Every: time.Minute, Method: ops.ResampleLinear, By: byNode,
				Fields: []string{"temperature", "humidity"}, MaxGap: 5 * time.Minute}))
		}},
		{Name: "threshold", New: func() operation.Operation {
			return optest.Must(ops.NewThreshold(ops.ThresholdConfig{Field: "temperature", Above: ptr(22.5), Below: ptr(21), By: byNode}))
		}},
		{Name: "rate of change", New: func() operation.Operation {
			return optest.Must(ops.NewRateOfChange(ops.RateConfig{Field: "humidity", Max: 0.002, By: byNode}))
		}},
		{Name: "per key statistics", New: operation.PerKey(operation.ByTags("node"),
			stats(ops.StatsConfig{Size: 30 * time.Minute, Fields: []string{"temperature"}, Aggregates: []string{"mean"}}), 20*time.Minute)},
	}
}

// fuzzOps are the operations FuzzOperationRestore restores into.
func fuzzOps() []optest.OpCase {
	return []optest.OpCase{
		{Name: "per key", New: operation.PerKey(operation.ByTags("node"), func() operation.Operation {
			return optest.Must(ops.NewStats(ops.StatsConfig{Size: time.Second, Aggregates: []string{"mean"}}))
		}, 5*time.Second)},
		{Name: "align", New: func() operation.Operation {
			return optest.Must(ops.NewAlign(ops.AlignConfig{Bucket: time.Second, Sensor: []string{"node"}}))
		}},
		{Name: "dedup", New: func() operation.Operation {
			return optest.Must(ops.NewDedup(ops.DedupConfig{By: []string{"node", "seq"}}))
		}},
		{Name: "resample", New: func() operation.Operation {
			return optest.Must(ops.NewResample(ops.ResampleConfig{Every: time.Second, By: []string{"node"}}))
		}},
		{Name: "threshold", New: func() operation.Operation {
			return optest.Must(ops.NewThreshold(ops.ThresholdConfig{Field: "v", Above: ptr(5), By: []string{"node"}}))
		}},
		{Name: "rate of change", New: func() operation.Operation {
			return optest.Must(ops.NewRateOfChange(ops.RateConfig{Field: "v", Max: 3, By: []string{"node"}}))
		}},
	}
}

// Restore refuses the snapshot of an operation configured otherwise, whose
// state means something else.
func TestRestoreRefusesAnotherConfiguration(t *testing.T) {
	dedup := func(by ...string) func() operation.Operation {
		return func() operation.Operation { return optest.Must(ops.NewDedup(ops.DedupConfig{By: by})) }
	}
	resample := func(every time.Duration, by ...string) func() operation.Operation {
		return func() operation.Operation {
			return optest.Must(ops.NewResample(ops.ResampleConfig{Every: every, By: by}))
		}
	}
	threshold := func(field string, by ...string) func() operation.Operation {
		return func() operation.Operation {
			return optest.Must(ops.NewThreshold(ops.ThresholdConfig{Field: field, Above: ptr(1), By: by}))
		}
	}
	for _, tc := range []struct {
		name     string
		from, to func() operation.Operation
	}{
		{"dedup by other names", dedup("node", "seq"), dedup("node")},
		{"resample at another interval", resample(time.Second, "node"), resample(2*time.Second, "node")},
		{"resample of other series", resample(time.Second, "node"), resample(time.Second)},
		{"threshold on another field", threshold("v", "node"), threshold("w", "node")},
		{"threshold of other sensors", threshold("v", "node"), threshold("v")},
		{"a dedup's snapshot into a threshold", dedup(), threshold("v")},
	} {
		t.Run(tc.name, func(t *testing.T) { optest.RequireMismatch(t, tc.from, tc.to) })
	}
}

// Snapshots written before, stored in testdata/snapshots (each of the
// recording's first 600 inputs, with checkpoints), restore, and snapshot
// again to the same bytes, which a run over the same inputs writes too:
// the form of the built-ins' state does not change without a version.
func TestRestoresStoredSnapshots(t *testing.T) {
	ins := optest.RecordedInputs(t, recording)[:600]
	for _, op := range recordedOps() {
		t.Run(op.Name, func(t *testing.T) {
			stored, err := os.ReadFile(filepath.Join("testdata", "snapshots", strings.ReplaceAll(op.Name, " ", "-")+".bin"))
			require.NoError(t, err)
			restored := op.New().(operation.Snapshotter)
			r := state.NewReader(stored)
			require.NoError(t, restored.Restore(r))
			require.Zero(t, r.Len(), "bytes left after Restore")
			var w state.Writer
			require.NoError(t, restored.Snapshot(&w))
			require.Equal(t, stored, w.Bytes(), "the restored operation's snapshot")

			pl := optest.NewPlayer(op.New(), true)
			pl.Play(ins)
			w.Reset()
			require.NoError(t, pl.Op.(operation.Snapshotter).Snapshot(&w))
			require.Equal(t, stored, w.Bytes(), "the snapshot of a run over the same inputs")
		})
	}
}
