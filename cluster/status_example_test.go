package cluster_test

import (
	"os"
	"time"

	"github.com/sensorstorm/sensorstorm/cluster"
)

// A status as `sensorstorm cluster status` prints it: w1 has been
// assigned keep_1, which w2 still holds until the rebalance delay has
// passed.
func ExampleStatus_Write() {
	since := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	st := cluster.Status{
		Pipeline: "feed",
		Workers: []cluster.Announcement{
			{Worker: "w1", Since: since, Leases: []string{"source.sensors.0"}, Assigned: []string{"keep_0", "keep_1"}, Held: []string{"keep_0"}, Units: []string{"keep_0"}},
			{Worker: "w2", Since: since, Leases: []string{"source.sensors.1"}, Assigned: []string{"out_0"}, Held: []string{"keep_1", "out_0"}, Units: []string{"keep_1", "out_0"}},
		},
		Leases:   map[string]string{"source.sensors.0": "w1", "source.sensors.1": "w2"},
		Holdings: map[string]string{"source.sensors.0": "1", "source.sensors.1": "2"},
		Units: []cluster.Unit{
			{Consumer: "keep_0", Pinned: true, Pending: 3, AckPending: 12, Workers: []string{"w1"}, Checkpoint: 41, CheckpointAt: since.Add(-time.Second)},
			{Consumer: "keep_1", Pinned: true, AckPending: 9, Workers: []string{"w2"}},
			{Consumer: "out_0", Pinned: true, Pending: 1, AckPending: 4, Redeliver: 2, Workers: []string{"w2"}, Checkpoint: 40, CheckpointAt: since.Add(-1500 * time.Millisecond)},
		},
	}
	if err := st.Write(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// pipeline feed: 2 workers, 3 units
	// WORKER            SINCE                 LEASES            ASSIGNED       HELD          RECEIVED
	// w1                2026-12-05T06:00:00Z  source.sensors.0  keep_0,keep_1  keep_0        keep_0
	// w2                2026-12-05T06:00:00Z  source.sensors.1  out_0          keep_1,out_0  keep_1,out_0
	// SOURCE            STATE
	// source.sensors.0  read by w1, holding 1
	// source.sensors.1  read by w2, holding 2
	// UNIT              PINNED  LAG  ACK PENDING  REDELIVERED  CHECKPOINT          WORKERS
	// keep_0            true    3    12           0            41 at 05:59:59.000  w1
	// keep_1            true    0    9            0            -                   w2
	// out_0             true    1    4            2            40 at 05:59:58.500  w2
}
