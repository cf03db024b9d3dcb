package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/spool"
)

// backlog is a source with the backlog st, or none when !ok.
type backlog struct {
	st spool.BacklogStats
	ok bool
}

func (b backlog) BacklogStats() (spool.BacklogStats, bool) { return b.st, b.ok }

func TestBacklogs(t *testing.T) {
	c := metrics.NewBacklogs(map[string]metrics.Backlogged{
		"mqtt": backlog{ok: true, st: spool.BacklogStats{
			Records: 5000, Bytes: 250000, Oldest: time.Unix(70, 0).UnixNano(), OnDisk: 904, ReadBack: 12,
			Full: true, DrainRate: 1500, AddRate: 1000, CatchUp: 10 * time.Second,
		}},
		"http":   metrics.BacklogFunc(func() (spool.BacklogStats, bool) { return spool.BacklogStats{}, true }),
		"replay": backlog{},
	}, func() time.Time { return time.Unix(100, 0) })
	want := `
# HELP sensorstorm_backlog_messages Messages the source made durable that wait in its spool for the pipeline.
# TYPE sensorstorm_backlog_messages gauge
sensorstorm_backlog_messages{component="http"} 0
sensorstorm_backlog_messages{component="mqtt"} 5000
# HELP sensorstorm_backlog_age_seconds How long the oldest message waiting was received ago; 0 when none waits.
# TYPE sensorstorm_backlog_age_seconds gauge
sensorstorm_backlog_age_seconds{component="http"} 0
sensorstorm_backlog_age_seconds{component="mqtt"} 30
# HELP sensorstorm_backlog_at_quota 1 while the backlog is at its disk quota or the disk at its floor of free space: the source acknowledges no input.
# TYPE sensorstorm_backlog_at_quota gauge
sensorstorm_backlog_at_quota{component="http"} 0
sensorstorm_backlog_at_quota{component="mqtt"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"sensorstorm_backlog_messages", "sensorstorm_backlog_age_seconds", "sensorstorm_backlog_at_quota"))
	for name, v := range map[string]float64{
		"sensorstorm_backlog_bytes": 250000, "sensorstorm_backlog_on_disk_messages": 904, "sensorstorm_backlog_read_back_total": 12,
		"sensorstorm_backlog_drain_rate": 1500, "sensorstorm_backlog_catch_up_seconds": 10,
	} {
		assert.Equal(t, v, value(t, c, name, "component=mqtt"), name)
	}
	assert.Equal(t, 16, testutil.CollectAndCount(c), "eight metrics of each source with a backlog, none of the others")
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}
