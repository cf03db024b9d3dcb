package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/spool"
)

// backlogStats is an instance's backlog, none if !ok.
type backlogStats struct {
	st spool.BacklogStats
	ok bool
}

func (b backlogStats) BacklogStats() (spool.BacklogStats, bool) { return b.st, b.ok }

// A source's backlog is the sum of its instances': the oldest message of
// any, the longest catch-up, at the quota if any is.
func TestBacklogStatsSumsTheInstances(t *testing.T) {
	b := &Built{instances: map[string][]any{}, sinks: map[string]operation.Operation{}}
	_, ok := b.BacklogStats("sensors")
	assert.False(t, ok, "no instance yet")
	b.addInstance("sensors", 2, backlogStats{ok: true, st: spool.BacklogStats{
		Records: 10, Bytes: 1000, Oldest: 200, OnDisk: 4, ReadBack: 7, DrainRate: 5, AddRate: 1, CatchUp: 3 * time.Second}})
	_, ok = b.BacklogStats("sensors")
	assert.True(t, ok, "instance 2 before instances 0 and 1")
	b.addInstance("sensors", 0, backlogStats{ok: true, st: spool.BacklogStats{
		Records: 5, Bytes: 500, Oldest: 100, ReadBack: 1, Full: true, DrainRate: 2, AddRate: 2}})
	b.addInstance("sensors", 1, backlogStats{}) // not running yet
	b.addInstance("sensors", 3, 42)             // not a spooled source: no backlog
	st, ok := b.BacklogStats("sensors")
	assert.True(t, ok)
	assert.Equal(t, spool.BacklogStats{Records: 15, Bytes: 1500, Oldest: 100, OnDisk: 4, ReadBack: 8, Full: true,
		DrainRate: 7, AddRate: 3, CatchUp: 3 * time.Second}, st)

	b.addInstance("sensors", 0, backlogStats{ok: true}) // a new holding of instance 0 replaces the old
	st, _ = b.BacklogStats("sensors")
	assert.Equal(t, int64(10), st.Records)
	assert.Equal(t, int64(200), st.Oldest, "an instance with nothing waiting has no oldest")
	assert.False(t, st.Full)
}

// Instances are a source's instances as made, or a bolt's sink.
func TestInstances(t *testing.T) {
	b := &Built{instances: map[string][]any{}, sinks: map[string]operation.Operation{}}
	assert.Nil(t, b.Instances("sensors"), "none made yet")
	b.addInstance("sensors", 1, 42)
	assert.Equal(t, []any{nil, 42}, b.Instances("sensors"), "instance 0 not made yet")
	sink := operation.Func(nil)
	b.sinks["out"] = sink
	assert.Len(t, b.Instances("out"), 1)
}
