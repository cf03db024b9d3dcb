// Package cluster runs one pipeline on several worker processes over NATS
// JetStream.
//
// Every worker builds the whole topology. The edges into bolt instances go
// through JetStream (package jetstreamedge), whose pinned consumers decide
// which worker runs each bolt instance: when a worker stops pulling, the
// server pins another, and the unacknowledged messages are delivered to it
// again, before any newer one, so that it rebuilds the instance's windows
// as they were. What consumers cannot
// express, which worker replays a file source, a lease in a key-value
// bucket decides: the holder renews it, recording with it a checkpoint,
// the prefix of the source's particles that JetStream confirmed; when it
// dies the lease expires, and another worker takes it and replays the
// source past the checkpoint (topology.Skipper keeps the particles'
// identities, so that the downstream instances drop the copies of those
// emitted after the checkpoint). A source that was
// replayed to its end, with everything it emitted confirmed by JetStream,
// is marked done and never replayed again. Workers announce themselves,
// their leases and the units they received data for in a bucket whose
// entries expire, which Status reads.
//
// # What it is not
//
// Not a scheduler: nothing balances units actively; the server pins each
// consumer to one of the workers pulling. Not for live sources yet: an MQTT
// source would run on every worker (shared subscriptions are not wired),
// so Join refuses pipelines with live sources. A live pipeline's idle
// timeouts would also let a worker that runs nothing forward progress.
//
// See DESIGN.md, "Beyond one machine".
package cluster
