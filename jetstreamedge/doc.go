// Package jetstreamedge carries a pipeline's edges between worker
// processes over NATS JetStream: it is a topology.Transport.
//
// Every worker builds the whole topology. The edges into each bolt
// instance go through one subject of the pipeline's stream (the grouping
// picks the instance, so it picks the subject). Each subject has a durable
// pull consumer with a priority group of policy pinned_client: every
// worker pulls, the server delivers to one, and when that worker stops
// pulling for Config.PinnedTTL it pins another. Pinned consumers decide
// which worker runs a downstream instance. With Config.Owns, a worker pulls
// only for the units it owns, and hands over those it no longer owns
// (Transport.Reassign).
//
// Particles travel in batches, one message per batch, in a compact binary
// encoding: a tag set and the field names of a particle cost their bytes
// once per message, a float with a few decimals two or three bytes (about
// 25 bytes a particle for the test recording against 137 in line
// protocol; BenchmarkCodec measures it); the sender's progress
// (high-water mark, forwarded watermark), drained and end-of-stream marks
// and meta particles travel in the same messages, in order.
//
// Delivery is acknowledged hop by hop (STORM-3314): a particle's local
// tree completes once JetStream confirmed the message that carries it
// (PubAck), and a worker acknowledges a message only once every particle
// in it completed its local tree; until then it sends in-progress
// acknowledgements, so that windows may hold messages longer than the ack
// wait. Meta particles are part of their message's tree like data ones. A
// receiving instance drops copies of data particles it received already,
// by identity (origin, sequence), within Config.DedupWindow.
//
// When a consumer is pinned to a worker after another (a worker died),
// the messages the other took and did not acknowledge come again once
// their ack wait expires, while newer ones would flow at once and make
// the older particles late. The worker taking the unit over holds the
// newer messages back until the server has no message pending that it did
// not receive (at most an ack wait and a pull's expiry), so that the unit
// sees its input in order and rebuilds the windows open at the move.
//
// # What it is not
//
// Not a cluster manager: which worker runs a source is decided elsewhere
// (package cluster leases it). Not exactly once: delivery is at least
// once, and the identity filter removes the copies it can recognise: a
// derived particle's identity is a function of its parent's (package
// topology), so that a unit that moved re-derives copies under the same
// identities, but the filter of a receiving instance that moved starts
// empty. A worker that lost its pin while alive, other than by handing
// the unit over, keeps its messages in progress: the worker pinned next
// waits for them only until its catch-up bound, and does not get them. Only the built-in meta particles of
// package metaparticle cross workers (UnknownMetaError).
//
// See DESIGN.md, "Beyond one machine".
package jetstreamedge
