// Package jetstreamedge carries a pipeline's edges between worker
// processes over NATS JetStream: it is a edge.Transport.
//
// Every worker builds the whole topology. The edges into each bolt
// instance go through one subject of the pipeline's stream (the grouping
// picks the instance, so it picks the subject). Each subject has a durable
// pull consumer with a priority group of policy pinned_client: the server
// delivers to one of the workers pulling, and when that worker stops
// pulling for Config.PinnedTTL it pins another. Pinned consumers decide
// which worker runs a downstream instance. With Config.Owns, a worker pulls
// only for the units it owns, and hands over those it no longer owns
// (Transport.Reassign). That also keeps a unit where it is when its
// consumer's leader changes (a NATS node stopped): the pin lives in the
// leader's memory, and a new leader pins whichever worker pulls first.
// An inlet pulls with one fetch request at a time, of Config.FetchBatch
// messages, whose replies queue without a bound but MaxAckPending's: the
// client never drops a message the server sent it (as the pull
// iterator, whose channel holds one pull's worth, does under load), and
// an inlet that hands its unit over stops once its last fetch ended, so
// that nothing the server sent goes unreceived.
//
// Particles travel in batches, one message per batch, in a compact binary
// encoding: a tag set and the field names of a particle cost their bytes
// once per message, a float with a few decimals two or three bytes (about
// 25 bytes a particle for the test recording against 137 in line
// protocol; BenchmarkCodec measures it); the sender's progress
// (high-water mark, forwarded watermark), drained and end-of-stream marks
// and meta particles travel in the same messages, in order.
//
// Order is kept per sender, an outlet of one worker. A publish the
// server does not confirm (no stream leader while one is elected, a
// connection lost, a timeout) is tried again in place, with backoff, for
// Config.RetryFor; the batches after it wait, and the particles' trees do
// not fail for a transient NATS error. Batches published before the
// failure was known can be stored before the one tried again, and a
// delivery lost with a consumer's leader comes again only once its ack
// wait expired, after newer ones. So every message carries its sender (a
// random number per outlet) and its number among the sender's, and a
// receiving inlet hands each sender's messages on in number order,
// holding one that comes ahead of a missing one until that comes, or for
// at most two ack waits and a publish timeout (a sender that died while it
// tried the missing one again, a NATS outage longer than that, or a hole
// left by a previous owner that acknowledged messages out of order).
// Stream sequences cannot do this: a retried publish is stored after the
// batches that overtook it. A
// receiver cannot tell a number acknowledged before it had the unit from
// one still to come, so it starts each sender's count past the highest
// number of the first messages it receives from it (after a catch-up,
// below, all those the server had pending).
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
// The filter of a unit that moved starts empty, so each unit also records
// its frontier in a key-value bucket (FrontierBucket): a position in
// release order before which every data particle it received finished its
// tree, and before which one it did not receive would have been late or
// behind (edge.Feed.Released, and the first particle of each message
// in progress). A message is acknowledged only once the frontier recorded
// is past its particles, one write per round of acknowledgements; a unit
// drops, as copies, the particles before the frontier it started from. So
// a unit that moved takes again, of what its predecessors received,
// exactly the particles of the messages they had not acknowledged: of a
// window that fired already, its newest inputs. It fires the window again
// with them, and the result has the identity it had, since a result is
// derived from its newest input (package topology): its receivers drop it
// as the copy it is.
//
// When a consumer is pinned to a worker after another (a worker died),
// the messages the other took and did not acknowledge come again once
// their ack wait expires, while newer ones would flow at once and make
// the older particles late. The worker taking the unit over holds the
// newer messages back until the server has no message pending that it did
// not receive (at most an ack wait and a pull's expiry), so that the unit
// sees its input in order and rebuilds the windows open at the move. It
// does so too when the server's delivery numbers show that deliveries
// went elsewhere or were lost on the way; a silence alone (a NATS node
// stopped) changes nothing, and each sender's count goes on.
//
// # What it is not
//
// Not a cluster manager: which worker runs a source is decided elsewhere
// (package cluster leases it). Not exactly once: delivery is at least once,
// and receivers drop the copies they recognise, by identity within
// Config.DedupWindow and by the frontier; a sink that writes outside
// JetStream writes again what it wrote and had not acknowledged when its
// worker died. A window whose result time depends on its first input (a
// session) that fires again after a move comes out at another time under
// the same identity: a receiver that forgot the first result drops the
// second only if its frontier is past it. A late particle that comes to a
// unit that moved, before the frontier it started from, is counted as a
// copy, not handed to the late policy. A worker that lost its pin while
// alive, other than by handing the unit over, keeps its messages in
// progress: the worker pinned next waits for them only until its catch-up
// bound, and does not get them; pinned again later, it waits for the
// messages the other acknowledged as for a gap, and skips them only after
// that wait. A publish stored only after its receiver started the sender's
// count (tried again while the unit moved, or while the receiver started)
// is handed on when it comes, late. Only the built-in meta particles of
// package metaparticle cross workers (UnknownMetaError).
//
// See DESIGN.md, "Beyond one machine".
package jetstreamedge
