// Package jetstreamedge carries a pipeline's edges between worker
// processes over NATS JetStream: its [Transport] is an edge.Transport, so
// that a topology's bolt instances can run on other workers without a
// change to operations, buffers or the acker.
//
// Every worker builds the whole topology with a Transport of the same
// pipeline; the edges into each bolt instance the topology asks for go
// through one subject of the pipeline's stream (a bolt chained to another
// by forward edges asks for none: its instances run with their upstream
// ones, see topology.Forward), and the server delivers each subject's
// messages to one worker at a time:
//
//	tr, err := jetstreamedge.New(ctx, nc, jetstreamedge.Config{Pipeline: "mean", Replicas: 3})
//	if err != nil {
//		return err // ErrServerTooOld below NATS server 2.11
//	}
//	topo, err := topology.New(topology.Config{
//		Transport:   tr,
//		Acking:      topology.AckingConfig{Enabled: true},
//		Checkpoints: topology.CheckpointConfig{Store: store}, // a checkpoint.Partitioned
//	})
//
// Package cluster makes the Transport for a worker (cluster.Worker's
// Transport method), the store of the units' checkpoints
// (cluster.Worker.CheckpointStore), and decides which worker owns which
// unit ([Config.Owns]).
//
// # Delivery
//
// Particles travel in batches in a compact binary encoding, with the
// sender's watermarks and meta particles in the same messages, in order.
// Delivery is acknowledged hop by hop (STORM-3314): a particle's local
// tree completes once JetStream confirmed the message that carries it,
// and a worker acknowledges a message only once every particle in it
// completed its local tree. Order is kept per sender; a publish the server
// does not confirm is tried again in place for [Config.RetryFor], and the
// particles' trees do not fail for a transient NATS error. A unit's state
// moves by checkpoint: a message is acknowledged once a committed
// checkpoint of its unit is after it, and a unit that moves to another
// worker restores its last checkpoint and takes, in order, what its
// predecessor had not acknowledged and the checkpoint does not hold. The
// Transport's documentation tells how.
//
// # What it is not
//
// Not a cluster manager: which worker runs a unit or a source is decided
// elsewhere (package cluster). Not exactly once: delivery is at least
// once, and receivers drop the copies they recognise, by identity within
// [Config.DedupWindow] and by what the checkpoint a unit restored holds; a
// sink that does not commit with its checkpoints (standard output, MQTT)
// writes again what it wrote after its last one when its worker died. Only the built-in meta particles of
// package metaparticle cross workers ([UnknownMetaError]). See DESIGN.md,
// "Beyond one machine", and docs/scale-out.md.
package jetstreamedge
