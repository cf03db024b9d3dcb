package statuspage_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/statuspage"
)

// mqttSource is an MQTT source connected to its one broker, with the
// backlog backlog (none if nil).
type mqttSource struct {
	stats   mqtt.Stats
	backlog *spool.BacklogStats
}

func (s *mqttSource) Stats() *mqtt.Stats              { return &s.stats }
func (s *mqttSource) Broker() string                  { return "tcp://broker:1883" }
func (s *mqttSource) SpoolStats() (spool.Stats, bool) { return spool.Stats{}, s.backlog != nil }
func (s *mqttSource) BacklogStats() (spool.BacklogStats, bool) {
	if s.backlog == nil {
		return spool.BacklogStats{}, false
	}
	return *s.backlog, true
}

func TestMQTTBacklog(t *testing.T) {
	src := &mqttSource{backlog: &spool.BacklogStats{
		Records: 120000, Bytes: 6 << 20, OnDisk: 115904, ReadBack: 3000, Oldest: start.Add(-90 * time.Second).UnixNano(),
		Full: true, DrainRate: 2500, AddRate: 1000, CatchUp: 80 * time.Second,
	}}
	src.stats.Connects.Add(1)
	p := newPage(t, statuspage.Config{MQTT: &statuspage.MQTT{Source: src, Brokers: []string{"tcp://broker:1883"}}})
	ev := p.connect(t)
	s := ev.snapshot()
	require.NotNil(t, s.MQTT)
	catchUp := 80.0
	require.Equal(t, &statuspage.BacklogSnapshot{
		Messages: 120000, Bytes: 6 << 20, OnDisk: 115904, ReadBack: 3000, Age: 90,
		AtQuota: true, DrainRate: 2500, AddRate: 1000, CatchUp: &catchUp,
	}, s.MQTT.Backlog)

	// Changed before the tick, read by the update after it.
	*src.backlog = spool.BacklogStats{}
	p.tick()
	s = ev.snapshot()
	require.Equal(t, &statuspage.BacklogSnapshot{}, s.MQTT.Backlog, "nothing waits: no age, no estimate")

	src.backlog = nil
	p.tick()
	s = ev.snapshot()
	require.Nil(t, s.MQTT.Backlog, "no spool, no backlog")
}
