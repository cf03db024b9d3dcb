package topology_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// namedGrouping is a grouping of the user's that names itself.
type namedGrouping struct{ topology.Grouping }

func (namedGrouping) String() string { return "by-room" }

// anonymousGrouping is a grouping of the user's without a name.
type anonymousGrouping struct{}

func (anonymousGrouping) Route(_ *particle.Particle, _ int, dst []int) []int { return append(dst, 0) }

func TestGraphNamesEveryGroupingAndTellsSinksFromBolts(t *testing.T) {
	topo, err := topology.New(topology.Config{})
	require.NoError(t, err)
	nop := operation.Stateless(operation.Func(nil))
	topo.AddSource("in", nil, topology.SourceConfig{Parallelism: 2})
	topo.AddBolt("a", nop, topology.BoltConfig{Parallelism: 3}).Input("in", topology.Fields("node", "room"))
	topo.AddBolt("b", nop, topology.BoltConfig{}).Input("a", topology.Shuffle()).Input("in", topology.All())
	topo.AddBolt("c", nop, topology.BoltConfig{}).Input("b", topology.Global()).InputStream("a", topology.LateStream, topology.Direct(nil))
	topo.AddBolt("d", nop, topology.BoltConfig{}).Input("b", namedGrouping{topology.Global()}).Input("c", anonymousGrouping{})

	want := topology.Graph{
		Components: []topology.GraphComponent{
			{Name: "in", Kind: "source", Parallelism: 2},
			{Name: "a", Kind: "bolt", Parallelism: 3},
			{Name: "b", Kind: "bolt", Parallelism: 1},
			{Name: "c", Kind: "bolt", Parallelism: 1},
			{Name: "d", Kind: "sink", Parallelism: 1},
		},
		Edges: []topology.GraphEdge{
			{From: "in", To: "a", Grouping: "fields(node,room)"},
			{From: "a", To: "b", Grouping: "shuffle"},
			{From: "in", To: "b", Grouping: "all"},
			{From: "b", To: "c", Grouping: "global"},
			{From: "a", To: "c", Stream: "late", Grouping: "direct"},
			{From: "b", To: "d", Grouping: "by-room"},
			{From: "c", To: "d", Grouping: "topology_test.anonymousGrouping"},
		},
	}
	require.Equal(t, want, topo.Graph())
}

func ExampleTopology_Graph() {
	topo, _ := topology.New(topology.Config{})
	topo.AddSource("sensors", nil, topology.SourceConfig{})
	topo.AddBolt("mean", operation.Stateless(operation.Func(nil)), topology.BoltConfig{Parallelism: 4}).
		Input("sensors", topology.Fields("node"))
	g := topo.Graph()
	for _, c := range g.Components {
		fmt.Printf("%s %s x%d\n", c.Kind, c.Name, c.Parallelism)
	}
	for _, e := range g.Edges {
		fmt.Printf("%s -> %s by %s\n", e.From, e.To, e.Grouping)
	}
	// Output:
	// source sensors x1
	// sink mean x4
	// sensors -> mean by fields(node)
}

// The zero Config is valid, and Validate reports every invalid field of
// a Config at once, as New would.
func TestConfigValidate(t *testing.T) {
	var zero topology.Config
	require.NoError(t, zero.Validate())
	assert.Zero(t, zero.BatchSize, "Validate left the Config as it was")

	bad := topology.Config{BatchSize: -1, InboxSize: -1, TickInterval: -time.Second}
	err := bad.Validate()
	for _, want := range []string{"batch size -1", "inbox size -1", "negative tick interval"} {
		assert.ErrorContains(t, err, want)
	}
	_, newErr := topology.New(bad)
	assert.Equal(t, err.Error(), newErr.Error())
}
