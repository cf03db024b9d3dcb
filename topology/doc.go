// Package topology is the engine: it wires sources and bolts into a graph,
// runs every instance in its own goroutine and moves particles between them.
//
// Particles travel in batches over bounded inboxes, so a slow bolt slows its
// upstream instances down to the sources (backpressure) and memory stays
// bounded. Every bolt instance is fronted by a synchronization buffer
// (package syncbuffer) and releases particles to its operation in event-time
// order. Meta particles go to every instance of every downstream bolt and
// each instance handles each identity once. With acking on, every data
// particle a source emits is tracked by the XOR acker (package acker) until
// its whole tree was processed, and failed trees are retried and finally
// dead-lettered.
//
// Cancelling the context given to [Topology.Run] stops the sources; end of
// stream then flows down the graph, every buffer is flushed in order, sinks
// are closed, and Run returns once everything was drained.
//
// See DESIGN.md, "Data flow".
package topology
