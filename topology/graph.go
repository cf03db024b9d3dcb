package topology

import (
	"fmt"
	"strings"
)

// Graph describes a topology's shape, for tools that draw it: its
// components and the edges between them, in the order they were declared.
type Graph struct {
	Components []GraphComponent `json:"components"`
	Edges      []GraphEdge      `json:"edges"`
}

// GraphComponent is a source or a bolt of a Graph.
type GraphComponent struct {
	Name string `json:"name"`
	// Kind is "source", "bolt", or "sink" for a bolt no other bolt reads.
	Kind        string `json:"kind"`
	Parallelism int    `json:"parallelism"`
}

// GraphEdge is an input of a bolt: the stream of From that To reads, and
// how its particles are spread over To's instances.
type GraphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Stream is the stream read, empty for the default one.
	Stream string `json:"stream,omitempty"`
	// Grouping names the grouping: shuffle, all, global, direct,
	// fields(a,b), the String of a grouping that is a fmt.Stringer, or
	// its Go type.
	Grouping string `json:"grouping"`
}

// Graph returns the topology's shape as declared so far.
func (t *Topology) Graph() Graph {
	read := map[string]bool{}
	var g Graph
	for _, b := range t.bolts {
		for _, in := range b.inputs {
			read[in.from] = true
			g.Edges = append(g.Edges, GraphEdge{From: in.from, To: b.name, Stream: in.stream, Grouping: groupingName(in.grouping)})
		}
	}
	for _, s := range t.sources {
		g.Components = append(g.Components, GraphComponent{Name: s.name, Kind: "source", Parallelism: s.cfg.Parallelism})
	}
	for _, b := range t.bolts {
		kind := "bolt"
		if !read[b.name] {
			kind = "sink"
		}
		g.Components = append(g.Components, GraphComponent{Name: b.name, Kind: kind, Parallelism: b.cfg.Parallelism})
	}
	return g
}

// groupingName names g for Graph.
func groupingName(g Grouping) string {
	switch g := g.(type) {
	case shuffle:
		return "shuffle"
	case all:
		return "all"
	case global:
		return "global"
	case direct:
		return "direct"
	case fields:
		return "fields(" + strings.Join(g, ",") + ")"
	case fmt.Stringer:
		return g.String()
	}
	return fmt.Sprintf("%T", g)
}
