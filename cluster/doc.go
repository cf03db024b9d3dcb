// Package cluster runs one pipeline on several worker processes over NATS
// JetStream.
//
// Every worker builds the whole topology. The edges into bolt instances go
// through JetStream (package jetstreamedge), whose pinned consumers decide
// which worker runs each bolt instance: when a worker stops pulling, the
// server pins another, and the unacknowledged messages are delivered to it
// again, before any newer one, so that it rebuilds the instance's windows
// as they were.
//
// Each worker assigns the units (bolt instances) among the workers
// announced, all the same way without talking to each other: each unit,
// in the order of their names, goes to the worker that ranks highest for
// it by rendezvous hashing among those below an even share, so that the
// units spread evenly and a worker joining or leaving moves few others. A
// worker pulls only for the units assigned to it, so that the server pins
// each unit to its owner. When a worker joins, the workers that run units
// now assigned to it keep them for Config.RebalanceDelay, then hand them
// over: stop pulling, give back what they took and had not finished (the
// instance starts afresh, topology.ErrReleased), and unpin the consumer;
// the server pins the newcomer, which rebuilds the unit's windows from the
// messages given back. When a worker dies, its announcement expires
// (LeaseTTL) and its units' new owners pull at once; the server pins them
// once the dead worker's pin expired (PinnedTTL). What consumers cannot
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
// Not a scheduler: units spread by count, not by load, and every worker
// runs every unit's instance, idle where it does not own it. Leases are not
// balanced: the first worker to ask replays a file source. A unit handed
// over is unavailable for the time its new owner takes to catch up (at
// most an ack wait), and the instance it leaves had derived particles that
// its successor derives again: receivers drop those copies by identity,
// but a message that carries such a copy among newer particles stays
// unacknowledged, and if its receiving unit moves too, by a kill or a
// later handover, the receiver there, whose filter starts empty, takes
// the copy again: a window that fired already can fire again with it
// alone.
// Workers that see different workers announced for a moment may both pull
// for a unit: the server still pins one. Not for live sources yet: an MQTT
// source would run on every worker (shared subscriptions are not wired),
// so Join refuses pipelines with live sources. A live pipeline's idle
// timeouts would also let a worker that runs nothing forward progress.
//
// See DESIGN.md, "Beyond one machine".
package cluster
