// Package cluster runs one pipeline on several worker processes over NATS
// JetStream: every worker builds the whole topology, and the workers share
// its bolt instances, its recordings and its live feeds among themselves,
// taking over the share of a worker that leaves or dies.
//
// A worker joins the pipeline's cluster and gives the pipeline's build
// its transport and leases:
//
//	nc, err := nats.Connect("nats://127.0.0.1:4333")
//	if err != nil {
//		return err
//	}
//	w, err := cluster.Join(ctx, nc, cluster.Config{Pipeline: "mean", Worker: "w1"})
//	if err != nil {
//		return err
//	}
//	ran := make(chan error, 1)
//	go func() { ran <- w.Run(ctx) }() // announces the worker, assigns the units
//	built, err := p.Build(pipeline.Options{
//		Transport: w.Transport(), Checkpoints: w.CheckpointStore(),
//		Lease: w.LeaseSource, LeaseLiveSource: w.LeaseLiveSource,
//		Incarnation: w.Incarnation(), Cluster: "mean", Worker: w.Name(),
//	})
//
// as sensorstorm run --cluster does; sensorstorm cluster status prints
// what [ReadStatus] reads.
//
// # How the work is shared
//
// The edges into bolt instances go through JetStream (package
// jetstreamedge). Each bolt instance is a unit with a pinned consumer:
// the server delivers its messages to one worker at a time, and when that
// worker stops pulling, pins another and delivers the unacknowledged
// messages to it again, before any newer one. A unit checkpoints its
// state into JetStream ([Worker.CheckpointStore]) and acknowledges its
// messages once a checkpoint holds their effect; wherever it starts, it
// restores its last checkpoint, once the worker that held it before let
// go of it, and takes the messages after it. The instances of a bolt chained by
// forward edges (topology.Forward) are no units: each belongs to the unit
// of its chain's head, runs, moves and starts afresh with it, and the
// edges into it stay in the process. Every worker assigns the units among
// the workers announced the same way, without talking to the others
// (rendezvous hashing capped at an even share), and pulls only for its
// own. A recording is replayed by the worker holding its lease
// ([Worker.LeaseSource]); an instance of a live source such as MQTT runs
// on the worker holding its lease ([Worker.LeaseLiveSource]), and those
// leases are assigned like units. A worker that joins gets its share
// after [Config.RebalanceDelay]; one that leaves ([Worker.Leave]) hands
// its share over at once; a dead one's share moves once its announcement
// and leases expire ([Config.LeaseTTL]). A worker cut off from NATS
// fences itself off half a lease TTL before that, so that it stops acting
// as an owner before anyone else can take its share, and rejoins without
// state once it gets through again ([Worker.Run]). docs/scale-out.md
// tells what each move loses, doubles or delays, and what the tests
// measured.
//
// # What it is not
//
// Not a scheduler: units and live instances spread by count, not by load,
// and where they go is the hashing's choice, not the fewest moves'. Every
// worker runs a copy of every bolt instance, idle where it does not own
// its unit. Recordings are not balanced: the first worker to ask replays one to
// its end, and a replay is never handed over. A sink writing outside
// JetStream writes at least once: what a worker that died or handed it
// over had not acknowledged is written again. See DESIGN.md, "Beyond one
// machine".
package cluster
