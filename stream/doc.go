// Package stream declares the common topologies as one chain: a source,
// how out of order it is, the key, and the steps and sinks after it.
//
//	err := stream.From(src).
//		OutOfOrder(5 * time.Second).
//		KeyBy("node").
//		Window(stream.Tumbling(time.Minute), stream.Mean("temperature")).
//		ForEach(func(p particle.Particle) { fmt.Println(p.Tags, p.Fields) }).
//		Run(ctx)
//
// A Stream is a layer on package topology, not an engine of its own: Build
// adds to a topology.Topology the source and bolts a hand-written
// topology would have, so order, lateness, acking and checkpoints are the
// engine's, unchanged. What the chain adds is what a hand-written topology
// leaves to its author:
//
//   - The key is given once (KeyBy): it is both the fields grouping of the
//     keyed steps and the grouping of their results (ops.StatsConfig.By).
//   - Out-of-orderness belongs to the input (OutOfOrder): it is the
//     synchronization window of the bolts that read the source.
//   - Errors are collected as the chain is declared and returned once,
//     joined, by Build or Run, each naming its step.
//   - A source that is its run's stream clock (a paced replay,
//     connectors/replay) is made the run's clock, and the run a replay.
//
// A Stream is linear: each step reads the one before. Sinks (ForEach, To,
// WriteLines, ToFile) read the last step and leave the chain as it is, so
// several may follow one step. Anything else, such as joins or bolts with
// several inputs, is built with package topology directly.
//
// Components are named after their kind: the source "source", and the
// bolts "filter", "window", "align", "process", "foreach", "sink", "lines"
// and "file", numbered from the second of a kind on ("window-2"), so that
// their figures can be read with topology.Topology.Stats.
package stream
