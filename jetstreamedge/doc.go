// Package jetstreamedge carries a pipeline's edges between worker
// processes over NATS JetStream: it is a topology.Transport.
//
// Every worker builds the whole topology. The edges into each bolt
// instance go through one subject of the pipeline's stream (the grouping
// picks the instance, so it picks the subject). Each subject has a durable
// pull consumer with a priority group of policy pinned_client: every
// worker pulls, the server delivers to one, and when that worker stops
// pulling for Config.PinnedTTL it pins another. Pinned consumers decide
// which worker runs a downstream instance.
//
// Particles travel in batches, one message per batch, in a compact binary
// encoding (about 75 bytes a particle for the test recording against 137
// in line protocol; BenchmarkCodec measures it); the sender's progress
// (high-water mark, forwarded watermark), drained and end-of-stream marks
// and meta particles travel in the same messages, in order.
//
// Delivery is acknowledged hop by hop (STORM-3314): a particle's local
// tree completes once JetStream confirmed the message that carries it
// (PubAck), and a worker acknowledges a message only once every particle
// in it completed its local tree; until then it sends in-progress
// acknowledgements, so that windows may hold messages longer than the ack
// wait. A receiving instance drops copies of data particles it received
// already, by identity (origin, sequence), within Config.DedupWindow.
//
// # What it is not
//
// Not a cluster manager: which worker runs a source is decided elsewhere
// (package cluster leases it). Not exactly once: delivery is at least
// once, and the identity filter removes the copies it can recognise. The
// identities of derived particles are the instance's own counter, so a
// unit that moves to another worker numbers its output afresh, and copies
// of what the first worker emitted are not recognised downstream. Only the
// built-in meta particles of package metaparticle cross workers
// (UnknownMetaError).
//
// See DESIGN.md, "Beyond one machine".
package jetstreamedge
