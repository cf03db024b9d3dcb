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
// it by rendezvous hashing among those below an even share (units/workers,
// rounded down or up), so that the units spread evenly and a worker joining or leaving moves few others. A
// worker pulls only for the units assigned to it, so that the server pins
// each unit to its owner. When a worker joins, the workers that run units
// now assigned to it keep them for Config.RebalanceDelay, then hand them
// over: stop pulling, give back what they took and had not finished (the
// instance starts afresh, edge.ErrReleased), and unpin the consumer;
// the server pins the newcomer, which rebuilds the unit's windows from the
// messages given back. A worker that leaves (Worker.Leave) hands all of its
// units over that way at once. When a worker dies, its announcement expires
// (LeaseTTL) and its units' new owners pull at once; the server pins them
// once the dead worker's pin expired (PinnedTTL). What consumers cannot
// express, which worker replays a file source, a lease in a key-value
// bucket decides: the holder renews it, recording with it a checkpoint,
// the prefix of the source's particles that JetStream confirmed; when it
// dies the lease expires, and another worker takes it and replays the
// source past the checkpoint (topology.SourceEmitter.Skip keeps the particles'
// identities, so that the downstream instances drop the copies of those
// emitted after the checkpoint). A source that was
// replayed to its end, with everything it emitted confirmed by JetStream,
// is marked done and never replayed again. Workers announce themselves,
// their leases and the units they received data for in a bucket whose
// entries expire, which Status reads.
//
// # Live sources
//
// An instance of an MQTT source is a unit too (Worker.LeaseLiveSource), with a
// client id that is the same on every worker (pipeline.Options.Cluster)
// and a persistent session; the instances of a source split its feed with
// a shared subscription ($share/GROUP/FILTER, Mosquitto 2 takes it from
// MQTT 3.1.1 clients). The worker holding an instance's lease runs it. The
// broker goes on handing a dead worker's session its share of the feed,
// and keeps those messages, and the ones sent and not acknowledged, for
// the session: when the lease expires, another worker takes it, connects
// with the same client id and receives them. Mode tree acknowledges a
// message once JetStream confirmed its particles, so nothing needs a
// local spool (mode spool, whose spool another worker could not replay,
// is refused; so are http sources). The instances of all live sources are
// assigned among the workers announced as units are, so that n instances
// on n workers give each one; a worker takes an instance assigned to
// another only once its lease stayed free for a lease TTL, and takes none
// in its first lease TTL, so that workers started together share without
// moving any.
//
// When a worker joins, a worker holding an instance now assigned to it
// keeps it for Config.RebalanceDelay, then hands it over at the one point
// where nothing is lost or doubled: it stops taking messages from the
// broker, waits (up to a lease TTL) until every particle it emitted
// finished its tree, that is until JetStream confirmed it, which
// acknowledges its message to the broker, disconnects cleanly, the session
// staying, and frees the lease. The worker the instance is assigned to
// takes the lease at once, connects with the same client id and receives
// what the session kept: the messages queued meanwhile, and those sent and
// not acknowledged, none of which had been emitted. A hand-over that ran
// out of time disconnects all the same: the broker sends the messages not
// acknowledged again, and their particles come out twice, as after a
// kill.
//
// # Leaving
//
// A worker about to stop (sensorstorm run --cluster at its first SIGINT
// or SIGTERM) calls Worker.Leave: it withdraws its announcement and stops
// announcing, so that every worker, itself among them, assigns the units
// and live instances among the others; it hands over every live instance
// it holds at once, without the rebalance delay, by the hand-over above,
// and every unit it runs, as to a worker that joined; the workers they are
// assigned to take them at once, and it takes nothing back. Nothing is
// lost or doubled but what a hand-over that ran out of time, or a sink
// moved (see below), doubles. With no other worker announced, there is
// nobody to hand anything over to: Leave returns ErrAlone, and the worker
// stops as after a kill. A file source's replay is not handed over (see
// below): it goes on until the worker stops, and another worker resumes
// it once the lease expired.
//
// A file source is not handed over, by a worker that leaves either. Its
// lease is taken as it starts, so there is no point before it started to
// hand it over at. Handing a replay over while it runs could lose and
// double nothing (stop, wait until JetStream confirmed what it emitted,
// record that as the checkpoint), but its successor would read the file
// again from its start up to the checkpoint, and the worker that handed it
// over could never take it back, since a source runs once: a cluster left
// with that worker alone would stall. A replay ends by itself; a live feed
// does not, which is why its instances are the leases that spread.
//
// Each holding of a live instance runs a source of its own and numbers the
// instance's particles in a range of its own, counted in the done bucket:
// receivers would drop a new holder's particles as copies of the old
// one's. A message the broker sends again is a new particle: copies of
// messages whose particles reached JetStream before their acknowledgement
// reached the broker are counted, not dropped (a dedup operation can drop
// them).
//
// The watermark holds while an instance moves: its input stays silent,
// and only the idle timeout (30 s by default) lets the others' data pass;
// what comes after that is behind and follows the late policy. A live
// instance moves within two lease TTLs (20 s by default) after a kill,
// within a third of a lease TTL after the hand-over's wait, a bolt instance
// within the lease TTL and the ack wait (40 s by default): where order
// matters, give the buffers an idle timeout longer than that. A bolt instance's copy on a
// worker that does not run it receives nothing and, once its inputs are
// idle, forwards the stream clock minus the idle timeout downstream; the
// receiver takes the higher of that and the running copy's progress,
// which is what it does itself with an input silent for the idle timeout:
// nothing the running copy emits within the idle timeout of the stream
// clock is behind because of it.
//
// # What it is not
//
// Not a scheduler: bolt instances and live source instances spread by
// count, not by load, and every worker runs every bolt instance's copy,
// idle where it does not own it. Where they go is the hashing's choice, not
// the least moves': a worker that joins can take an instance where the
// counts were even already (one instance, two workers), a move that loses
// nothing but holds the watermark back while it lasts. File sources are not
// balanced: the first worker to ask replays a file source to its end, and a
// worker that joins later replays none that started. A bolt instance handed
// over is unavailable for the time its new owner takes to catch up (at most
// an ack wait); it fires again, with the inputs its predecessor had not
// acknowledged, windows that predecessor fired, and the results have the
// identities they had, so that its receivers drop them (package
// jetstreamedge, the frontier); a sink writing outside JetStream on a
// worker that died, or that handed it over, writes again what it had not
// acknowledged (a message it had written part of); a file sink writes
// one file per worker (pipeline.Options.Worker), so that a sink moving
// never truncates what another worker wrote. A worker that leaves
// hands over neither a file source's replay nor, when it is the last, what
// it runs; it takes nothing back, and what it did not hand over within
// Leave's context moves once it expired, as after a kill. Workers that
// see different workers announced for a moment may both pull for a unit:
// the server still pins one. A worker that could not renew a file source's
// lease (NATS out of reach for two renewals in a row, two thirds of the
// lease TTL) leaves that source to the other workers until it is restarted;
// a live instance it takes again once the lease is free, as a new holding
// with a source of its own.
//
// See DESIGN.md, "Beyond one machine".
package cluster
