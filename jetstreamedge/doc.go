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
//		Transport: tr,
//		Acking:    topology.AckingConfig{Enabled: true},
//	})
//
// Package cluster makes the Transport for a worker (cluster.Worker's
// Transport method) and decides which worker owns which unit
// ([Config.Owns]).
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
// particles' trees do not fail for a transient NATS error. A unit that
// moves to another worker receives again what its predecessor had not
// acknowledged, in order, and drops the copies it recognises. The
// Transport's documentation tells how.
//
// # What it is not
//
// Not a cluster manager: which worker runs a unit or a source is decided
// elsewhere (package cluster). Not exactly once: delivery is at least
// once, and receivers drop the copies they recognise, by identity within
// [Config.DedupWindow] and by the frontier ([FrontierBucket]); a sink
// that writes outside JetStream writes again what it wrote and had not
// acknowledged when its worker died. Only the built-in meta particles of
// package metaparticle cross workers ([UnknownMetaError]). See DESIGN.md,
// "Beyond one machine", and docs/scale-out.md.
package jetstreamedge
