// Package topology is the engine: it wires sources and bolts into a graph,
// runs every instance in its own goroutine and moves particles between them.
//
// Particles travel in batches over bounded inboxes, so a slow bolt slows its
// upstream instances down to the sources (backpressure) and memory stays
// bounded. Every bolt instance is fronted by a synchronization buffer
// (package syncbuffer) and releases particles to its operation in event-time
// order. Meta particles go to every instance of every downstream bolt and
// each instance handles each identity once. With acking on, every data
// particle a source emits tracked (SourceEmitter.EmitTracked) is tracked by
// the XOR acker (package acker) until its whole tree was processed, and
// failed trees are retried and finally dead-lettered. As with a Storm
// spout, the source keeps what it needs to produce a particle again
// (Acknowledger.Redeliver): the engine keeps 32 bytes per pending tree,
// whatever the particle.
//
// # Time
//
// A run has one stream clock (Config.Clock), read by every instance: the
// wall clock live, the replay's position in a replay. Event-time progress
// is the data's: a data particle carries its sender's high-water mark on
// the stream, so the receiving buffer judges it late against what that
// sender had sent, never against timing; and every instance forwards its
// watermark to the instances downstream with its batches, or alone when it
// has nothing to send, held back by what its operation still holds
// (operation.OutputHolder). So a bolt downstream of a window releases the
// window's results as soon as it closes, and, with Config.Replay, the
// output of a pipeline over recordings is a function of the recordings:
// the same bytes at every speed, batch size and schedule. Only a live run
// lets timing in, through idle inputs, and counts what that made late
// (ComponentStats.Behind).
//
// Cancelling the context given to [Topology.Run] stops the sources; end of
// stream then flows down the graph, every buffer is flushed in order, sinks
// are closed, and Run returns once everything was drained.
//
// See DESIGN.md, "Data flow".
package topology
