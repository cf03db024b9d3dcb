// Package ops holds the built-in operations, the ones sensor users expect
// and pipeline files name under op: windowed statistics, alerts, dedup,
// resample, align and filter. Each is a constructor taking a config,
// which it checks, and returning an operation.Operation:
//
//	mean, err := operation.FactoryOf(ops.NewStats, ops.StatsConfig{
//		Size: time.Minute, By: []string{"node"}, Fields: []string{"temperature"},
//	})
//	if err != nil {
//		return err // wraps ErrInvalidConfig
//	}
//	topo.AddBolt("mean", mean, topology.BoltConfig{}).Input("wsn", topology.Fields("node"))
//
// The operations:
//
//   - [NewStats]: mean, min, max, count, sum, stddev and percentiles per
//     window (tumbling, sliding, session or count) and group.
//   - [NewThreshold] and [NewRateOfChange]: an alert particle when a field
//     goes beyond a limit, or changes faster than one, and when it comes
//     back ([AlertFiring], [AlertOK]).
//   - [NewDedup]: repeated readings dropped.
//   - [NewResample]: one point per interval, the last value or linear.
//   - [NewAlign]: several sensors' readings merged into one particle per
//     time bucket.
//   - [NewFilter]: particles and fields selected by measurement, tags and
//     field names.
//
// Each config has a Validate that applies the defaults (the Default*
// constants) to a copy, as the constructor does. Every operation that
// keeps state between particles is an operation.Snapshotter, in the
// compact codec of package state; its snapshot starts with a version and
// the parts of its configuration its state means nothing without (the
// window, the names grouping sensors, the interval), so that the snapshot
// of an operation configured otherwise there is refused with an error
// wrapping operation.ErrStateMismatch.
//
// # What it is not
//
// Not the interface users implement, nor the windows, per-key state and
// timers the built-ins are made of: those are package operation, for any
// operation a user writes. Not the names pipeline files use: package
// pipeline maps them (window-mean, threshold, ...) to these constructors.
package ops
