package topology

// View is what observers read of a topology, before and while it runs:
// the metrics collector and the status page. A type that runs a topology
// on its callers' behalf (pipeline.Built) hands out a View rather than the
// Topology, whose Run would bypass it.
type View interface {
	// Components returns the names of the sources, then the bolts.
	Components() []string
	// Stats returns the counters of the named component, or nil.
	Stats(name string) *ComponentStats
	// Graph returns the topology's shape.
	Graph() Graph
	// AckStats returns the acker's figures.
	AckStats() AckStats
	// StreamTime returns the stream-clock time in ns, and false before
	// Run.
	StreamTime() (int64, bool)
	// Checkpoints returns the checkpoints' figures.
	Checkpoints() CheckpointStats
}

var _ View = (*Topology)(nil)
