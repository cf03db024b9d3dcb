package statuspage_test

import (
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/statuspage"
)

// gauge is a connector the page has never heard of: a sensor gateway
// polled over a serial line, reading ports and counting its polls. It
// implements statuspage.Reporter with standard types only.
type gauge struct {
	mu      sync.Mutex
	state   string
	polls   int64
	backlog *spool.BacklogStats // none if nil
}

func (g *gauge) Connections() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		g.mu.Lock()
		state := g.state
		g.mu.Unlock()
		_ = yield("/dev/ttyUSB0", state) && yield("/dev/ttyUSB1", "standby")
	}
}

func (g *gauge) Counters() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		g.mu.Lock()
		polls := g.polls
		g.mu.Unlock()
		_ = yield("polls", polls) && yield("timeouts", 2)
	}
}

func (g *gauge) BacklogStats() (spool.BacklogStats, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.backlog == nil {
		return spool.BacklogStats{}, false
	}
	return *g.backlog, true
}

func (g *gauge) set(change func(*gauge)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	change(g)
}

// instances serves the page's Config.Instances from a map.
func instances(m map[string][]any) func(string) []any {
	return func(name string) []any { return m[name] }
}

func TestAConnectorThePageDoesNotKnowHasAPanel(t *testing.T) {
	g := &gauge{state: "opening"}
	// The bolt's instances are none of the page's business: not Reporters.
	p := newPage(t, statuspage.Config{Instances: instances(map[string][]any{"in": {nil, g}, "out": {struct{}{}}})})
	ev := p.connect(t)
	s := ev.snapshot()
	require.Equal(t, []statuspage.ConnectorSnapshot{{
		Component: "in", Instance: 1,
		Connections: []statuspage.ConnectionSnapshot{{Address: "/dev/ttyUSB0", State: "opening"}, {Address: "/dev/ttyUSB1", State: "standby"}},
		Counters:    []statuspage.CounterSnapshot{{Name: "polls", Value: 0}, {Name: "timeouts", Value: 2}},
	}}, s.Connectors, "instance 0 is not made yet; no backlog without a spool")

	g.set(func(g *gauge) { g.state, g.polls = "connected", 120 })
	p.tick()
	s = ev.snapshot()
	require.Len(t, s.Connectors, 1)
	require.Equal(t, statuspage.ConnectionSnapshot{Address: "/dev/ttyUSB0", State: "connected"}, s.Connectors[0].Connections[0])
	require.Equal(t, statuspage.CounterSnapshot{Name: "polls", Value: 120}, s.Connectors[0].Counters[0])
}

func TestNoConnectorsNoPanels(t *testing.T) {
	s := newPage(t, statuspage.Config{}).connect(t).snapshot()
	require.Nil(t, s.Connectors)
}

func TestConnectorBacklog(t *testing.T) {
	g := &gauge{state: "connected", backlog: &spool.BacklogStats{
		Records: 120000, Bytes: 6 << 20, OnDisk: 115904, ReadBack: 3000, Oldest: start.Add(-90 * time.Second).UnixNano(),
		Full: true, DrainRate: 2500, AddRate: 1000, CatchUp: 80 * time.Second,
	}}
	p := newPage(t, statuspage.Config{Instances: instances(map[string][]any{"in": {g}})})
	ev := p.connect(t)
	s := ev.snapshot()
	require.Len(t, s.Connectors, 1)
	catchUp := 80.0
	require.Equal(t, &statuspage.BacklogSnapshot{
		Messages: 120000, Bytes: 6 << 20, OnDisk: 115904, ReadBack: 3000, Age: 90,
		AtQuota: true, DrainRate: 2500, AddRate: 1000, CatchUp: &catchUp,
	}, s.Connectors[0].Backlog)

	// Changed before the tick, read by the update after it.
	g.set(func(g *gauge) { *g.backlog = spool.BacklogStats{} })
	p.tick()
	s = ev.snapshot()
	require.Equal(t, &statuspage.BacklogSnapshot{}, s.Connectors[0].Backlog, "nothing waits: no age, no estimate")

	g.set(func(g *gauge) { g.backlog = nil })
	p.tick()
	s = ev.snapshot()
	require.Nil(t, s.Connectors[0].Backlog, "no spool, no backlog")
}
