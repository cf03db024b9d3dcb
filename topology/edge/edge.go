// Package edge is the boundary an edge of a topology crosses when its
// two ends live in different processes: the interfaces a transport
// implements (Transport, Outlet, Inlet) and the batches it carries. The
// engine (package topology) takes a Transport in its Config; package
// jetstreamedge is one, over NATS JetStream.
//
//	topo, err := topology.New(topology.Config{Transport: t, Acking: topology.AckingConfig{Enabled: true}})
//
// A pipeline's author never needs this package: only the author of a
// transport does.
//
// # What it is not
//
// Not a transport: it carries nothing itself. Not an engine: ordering,
// lateness and acking stay in package topology, which delivers to and
// takes from these interfaces.
package edge

import (
	"context"
	"errors"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

// Errors of the contract between the engine and a transport.
var (
	// ErrReleased is what an Inlet's Run returns when the Transport gave
	// the instance to another process while this one goes on: the
	// instance starts afresh (see Inlet).
	ErrReleased = errors.New("edge: instance released to another process")
	// ErrEnded is the cause of the end of an Inlet's context when its
	// instance ended its streams.
	ErrEnded = errors.New("edge: instance ended")
)

// Transport carries the edges into some bolt instances across a process
// boundary. With a Transport (topology.Config.Transport), every process builds the
// whole topology; the edges into an instance the Transport claims go out
// through its Outlet, and the instance takes its input only from its
// Inlet, never from the instances of its own process directly. Which
// process's copy of the instance receives anything is the Transport's
// business.
//
// The engine does not ask for the edges into an instance of a bolt chained
// by forward edges (topology.Forward): it runs in the process of its
// upstream instance, and so, up the chain, of the chain's head, the first
// instance the Transport feeds. What an Inlet does to its instance it
// does to the whole chain: a chain stops, ends and starts afresh with its
// head, and a batch from the Inlet is done once the particles in it
// completed their trees through the chain.
//
// Delivery is acknowledged hop by hop: a particle sent through an Outlet
// completes its local tree once the Outlet reports it durable, and a batch
// taken from an Inlet is reported done once every particle in it completed
// its tree in this process. Acking must be on.
type Transport interface {
	// Edge returns the two ends of the edges into instance index of bolt,
	// or ok false to keep them in process.
	Edge(bolt string, index int) (out Outlet, in Inlet, ok bool)
}

// Outlet sends batches towards one bolt instance. Its upstream instances
// call Send concurrently; the calls of one upstream instance come one at a
// time, and their order must be kept.
type Outlet interface {
	// Send hands b on, in order, blocking while the receiving side is
	// full. It returns an error when b was not sent. Otherwise it calls
	// done once, from any goroutine, when b is durable (nil) or was lost
	// (an error); a batch that carries Drained or EOS is durable before
	// Send returns. b belongs to the caller again once Send returns.
	Send(ctx context.Context, b *Batch, done func(error)) error
}

// Flusher is implemented by an Outlet that makes batches durable after
// Send returned. A unit's checkpoint (Resumer) commits only once the
// Outlets its instances sent to flushed: the checkpoint lets the Inlet
// forget the inputs before its cut, so what they produced must be durable
// by then, or a process killed right after the commit loses it.
type Flusher interface {
	// Flush returns once every batch Send took before the call is
	// durable, with an error if one was lost, or once ctx ends.
	Flush(ctx context.Context) error
}

// Inlet feeds one bolt instance from outside the process.
type Inlet interface {
	// Run delivers batches to feed until ctx ends or it fails. When Run
	// returns, the instance stops without flushing or ending its
	// streams: what it had not finished is the Transport's to deliver
	// again, to whichever process takes the instance over.
	//
	// When the instance ended its streams, and so did those chained to
	// it, ctx ends with the cause ErrEnded (context.Cause).
	//
	// When Run returns ErrReleased, the rest of the process goes on: the
	// instance stops, the batches it finished are reported done, the
	// others fail (their done callbacks get an error), and it discards
	// its state (a fresh operation from the bolt's factory, an empty sync
	// buffer), and so do the instances chained to it; then Run is called
	// again with the same Feed, to deliver
	// from scratch when the instance comes back to this process.
	Run(ctx context.Context, feed Feed) error
}

// Resumer is implemented by an Inlet whose instance checkpoints as a unit
// of its own (topology.Config.Checkpoints with a Transport): the instance
// and those chained to it snapshot their state between two batches, and
// the checkpoint records the Inlet's position there, as a
// topology.Positioner's.
type Resumer interface {
	Inlet
	// Acquire blocks until Run, called next, will deliver to this
	// process, or ctx ends: the engine then restores the unit's newest
	// checkpoint, which its last holder, on any process, committed. A
	// Run that finds the instance given to another process meanwhile
	// returns ErrReleased at once, so that the next holding restores
	// afresh; an instance idle here takes no checkpoint.
	Acquire(ctx context.Context) error
	// Position returns the Inlet's position after the batch whose
	// Position is delivered (0: before the first of this Run): enough for
	// a restore to take every batch after it and none before. It is
	// called between two Deliver calls.
	Position(delivered uint64) ([]byte, error)
	// Committed tells that a checkpoint holding position is complete:
	// the batches before it are never asked for again. A batch is done
	// for the Inlet once its done callback reported nil and a checkpoint
	// after it was committed.
	Committed(position []byte)
	// Resume is called before each Run with the position of the
	// checkpoint the instance restored, nil if it restored none.
	Resume(position []byte) error
	// End tells, once Run returned, that the instance ended its streams
	// in this holding (Run may have returned before, released): the unit
	// is over, and every other process's copy may end too.
	End(ctx context.Context)
}

// Feed is the instance's side of an Inlet.
type Feed interface {
	// Deliver hands b to the instance, blocking while its inbox is full
	// or while topology.Config.Acking.MaxPending batches are unfinished. It calls
	// done exactly once, from any goroutine: with nil when every particle
	// of b completed its tree and b's progress was handed on, with an
	// error wrapping ErrParticleFailed when one failed, or with the error
	// Deliver returns when it could not deliver b. The engine keeps b's
	// particles; b itself is the caller's again once Deliver returns.
	Deliver(ctx context.Context, b *Batch, done func(error)) error
	// Released returns the position in release order of the newest
	// particle the instance released from its sync buffer since it
	// started, and false before the first. Every data particle delivered
	// with a key before it was processed or handled as late, unless its
	// batch is still in progress; one delivered from now on with a key
	// before it is late or behind, never processed in order.
	Released() (syncbuffer.Key, bool)
	// Checkpoint asks for a checkpoint of the unit (Resumer) soon, rather
	// than at its interval: the Inlet holds many batches that it lets go
	// of only once a checkpoint after them committed (a JetStream
	// consumer delivers nothing more past its bound of messages not
	// acknowledged).
	Checkpoint()
}

// Batch is a batch between instances in transit across processes:
// what an upstream instance tells one downstream instance.
type Batch struct {
	// Input is the sender's input number at the receiver.
	Input int
	// Items are the particles, in the order sent.
	Items []Item
	// High and Promise are the sender's progress after the items: its
	// high-water mark on the stream and its forwarded watermark.
	High, Promise int64
	// Drained tells that only replays of failed particles follow from the
	// sender; EOS that nothing follows.
	Drained, EOS bool
	// Position numbers the batches an Inlet delivers in one Run, from 1
	// in delivery order; 0 for none. A unit's checkpoint asks its Inlet
	// for its position after the last batch before the cut (see Resumer).
	Position uint64
}

// Item is one particle of a Batch.
type Item struct {
	Particle particle.Particle
	// High is the sender's high-water mark when it sent the particle: the
	// receiver judges lateness against it.
	High int64
	// Replay marks a particle emitted again after a failure, or derived
	// from one.
	Replay bool
}

// ErrParticleFailed is the error a Feed's done callback reports when a
// particle of the batch failed: the batch should be delivered again.
var ErrParticleFailed = errors.New("edge: particle from a remote batch failed")
