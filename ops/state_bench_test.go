package ops_test

import (
	"testing"
	"time"

	"github.com/sensorstorm/sensorstorm/internal/optest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/ops"
)

// BenchmarkKeyedStateSnapshot measures snapshot and restore of 1M keyed
// states of the stateful built-ins other than windows (see
// operation.BenchmarkWindowSnapshot): the series of a resample, the
// sensors of an alert, the identities a dedup remembers.
func BenchmarkKeyedStateSnapshot(b *testing.B) {
	optest.BenchmarkSnapshots(b, 1_000_000, []optest.OpCase{
		{Name: "resample", New: func() operation.Operation {
			return optest.Must(ops.NewResample(ops.ResampleConfig{Every: time.Second, By: []string{"node"}}))
		}},
		{Name: "rate-of-change", New: func() operation.Operation {
			return optest.Must(ops.NewRateOfChange(ops.RateConfig{Field: "v", Max: 1, By: []string{"node"}}))
		}},
		{Name: "dedup", New: func() operation.Operation {
			return optest.Must(ops.NewDedup(ops.DedupConfig{By: []string{"node", "seq"}, Within: time.Hour}))
		}},
	})
}
