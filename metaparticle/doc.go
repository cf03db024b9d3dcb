// Package metaparticle holds the built-in meta particles: control messages
// that travel with the data, in event-time order, to every instance of every
// downstream bolt.
//
// A meta particle's identity is the (Origin, Seq) of the particle that
// carries it, fixed where it is created; the engine forwards it unchanged,
// so that a bolt instance that receives one copy per upstream instance
// handles and forwards each identity exactly once.
//
// Users define their own meta particles by implementing particle.Meta and
// handle them in operations; the engine forwards them like the built-ins.
//
// End of stream is not a forwarded meta particle: each instance announces
// its own end to its downstream instances once all of its inputs have
// ended, which is how a graceful shutdown flushes every buffer in order.
//
// See DESIGN.md, "Meta particles".
package metaparticle
