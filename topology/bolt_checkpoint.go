package topology

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

// boltCheckpoint is a bolt instance's side of checkpoints: the checkpoint
// in progress, the in-flight data it records, and the acknowledgements it
// defers to checkpoints.
type boltCheckpoint struct {
	// id is the checkpoint in progress or last taken; arrived marks the
	// inputs whose copy of its barrier came, waiting counts the others,
	// -1 once the instance's share is handed on.
	id      uint64
	arrived []bool
	waiting int
	// snapshot is the instance's state at the first copy of the barrier,
	// snapErr why it could not be taken; channel records, after it, the
	// particles that arrived on inputs still waiting for their copy: the
	// in-flight data of the cut, pushed again at restore.
	snapshot []byte
	snapErr  error
	channel  *state.Writer
	recorded int
	// deferred are the acknowledgements of inputs held since the last
	// snapshot: the next checkpoint holds their effect. cut are those of
	// the checkpoint in progress.
	deferred, cut ackOps
	// restored are the in-flight particles of the restored checkpoint,
	// by input, pushed before anything else.
	restored []restoredItem
	// idents are the identities of the inputs whose anchors the operation
	// keeps: what it emits anchored to them is derived from the newest.
	idents map[operation.Anchor]ident
	// inBuffer are the identities of the data particles in the sync
	// buffer restored: a unit's feed drops copies of them.
	inBuffer map[particleID]struct{}
}

// newBoltCheckpoint returns the checkpoint side of an instance with
// inputs inputs, as built.
func newBoltCheckpoint(inputs int) *boltCheckpoint {
	return &boltCheckpoint{arrived: make([]bool, inputs), waiting: -1, channel: state.NewWriter(nil),
		idents: map[operation.Anchor]ident{}}
}

// particleID is a particle's identity.
type particleID struct {
	origin uint32
	seq    uint64
}

// coordinator returns the coordinator the instance reports to: its
// unit's, or the run's.
func (b *boltInstance) coordinator() *coordinator {
	switch {
	case b.unit != nil:
		return b.unit
	case b.head != nil && b.head.unit != nil:
		return b.head.unit
	}
	return b.topo.ckpt
}

// ident is the identity of a held input, and the count of the particles
// derived from it.
type ident struct {
	key      syncbuffer.Key
	children uint32
}

// deriveFromIdent returns the identity of the next particle derived from
// the input of anchor a, or from parent if the operation let a go.
func (b *boltInstance) deriveFromIdent(a operation.Anchor, parent *particle.Particle) uint64 {
	id, ok := b.ckpt.idents[a]
	if !ok {
		return derive(parent, &b.curChildren)
	}
	seq := deriveFrom(id.key.Origin, id.key.Seq, &id.children)
	b.ckpt.idents[a] = id
	return seq
}

// deriveFromNewest returns the identity of a particle emitted anchored to
// anchors: derived from the newest of their inputs, as without
// checkpoints, or numbered in turn if the operation kept none.
func (b *boltInstance) deriveFromNewest(anchors []operation.Anchor) uint64 {
	var (
		newest operation.Anchor
		found  bool
		nk     syncbuffer.Key
	)
	for _, a := range anchors {
		if id, ok := b.ckpt.idents[a]; ok && (!found || nk.Less(id.key)) {
			newest, nk, found = a, id.key, true
		}
	}
	if !found {
		return 0
	}
	return b.deriveFromIdent(newest, nil)
}

// forget drops the identity of an input the operation no longer keeps.
func (b *boltInstance) forget(a operation.Anchor) {
	if b.ckpt != nil {
		delete(b.ckpt.idents, a)
	}
}

type restoredItem struct {
	input int
	env   envelope
}

// instanceName names a bolt instance in checkpoints.
func (b *boltInstance) instanceName() string { return fmt.Sprintf("bolt/%s/%d", b.name, b.index) }

// barrierOf returns the checkpoint id of a barrier, or 0.
func barrierOf(env *envelope) uint64 {
	if env.p.Meta == nil {
		return 0
	}
	if br, ok := env.p.Meta.(metaparticle.Barrier); ok {
		return br.Checkpoint
	}
	return 0
}

// onlyBarriers reports whether bt holds checkpoint barriers and nothing
// else, and is not marked drained or ended.
func onlyBarriers(bt *batch) bool {
	if len(bt.items) == 0 || bt.drained || bt.eos {
		return false
	}
	for i := range bt.items {
		if barrierOf(&bt.items[i]) == 0 {
			return false
		}
	}
	return true
}

// onBarrier handles the copy of barrier id that came on input. The first
// copy snapshots the instance and forwards the barrier, ahead of anything
// the instance emits after the snapshot; the last completes the
// instance's share.
func (b *boltInstance) onBarrier(ctx context.Context, input int, id uint64) {
	c := b.ckpt
	if id > c.id {
		b.startCheckpoint(ctx, id)
	}
	if id != c.id || c.arrived[input] {
		return
	}
	c.arrived[input] = true
	c.waiting--
	b.maybeCompleteCheckpoint()
}

func (b *boltInstance) startCheckpoint(ctx context.Context, id uint64) {
	c := b.ckpt
	c.id, c.waiting = id, 0
	for i := range c.arrived {
		// An input that ended sends no barrier: all it sent is before
		// the cut.
		c.arrived[i] = b.endedInputs[i]
		if !c.arrived[i] {
			c.waiting++
		}
	}
	c.snapshot, c.snapErr = b.snapshot(ctx)
	c.channel.Reset()
	c.recorded = 0
	c.cut, c.deferred = c.deferred, ackOps{}
	barrier := envelope{p: particle.Particle{Meta: metaparticle.Barrier{Checkpoint: id}, Origin: b.origin, Seq: metaSeqBit | barrierSeqBit | id}}
	b.router.route("", &barrier, nil)
	b.router.handOn(ctx, false)
}

// maybeCompleteCheckpoint hands the instance's share to the coordinator
// once every input's copy of the barrier came.
func (b *boltInstance) maybeCompleteCheckpoint() {
	c := b.ckpt
	if c.waiting != 0 {
		return
	}
	rep := ckptReport{id: c.id, instance: b.instanceName(), snapshot: withChannel(c.snapshot, c.recorded, c.channel), acks: c.cut, err: c.snapErr, committer: b.caps.commit}
	c.cut, c.snapshot, c.waiting = ackOps{}, nil, -1
	b.coordinator().send(rep)
}

// withChannel appends to a snapshot the in-flight data recorded after it.
func withChannel(snapshot []byte, recorded int, channel *state.Writer) []byte {
	count := state.NewWriter(nil)
	count.PutLen(recorded)
	return append(append(snapshot, count.Bytes()...), channel.Bytes()...)
}

// finalShare hands the coordinator the instance's final share once it ended its
// streams: its state after the flush, which every later checkpoint holds,
// and the acknowledgements it deferred since the last one. A sink
// restored from it keeps the output it wrote.
func (b *boltInstance) finalShare(ctx context.Context) {
	snap, err := b.snapshot(ctx)
	acks := b.ckpt.deferred
	b.ckpt.deferred = ackOps{}
	b.coordinator().end(ckptReport{instance: b.instanceName(), snapshot: withChannel(snap, 0, state.NewWriter(nil)), acks: acks, err: err, committer: b.caps.commit})
}

// inputEnded counts an input that ended as arrived for the checkpoint in
// progress.
func (b *boltInstance) inputEnded(input int) {
	c := b.ckpt
	if c == nil || c.waiting <= 0 || c.arrived[input] {
		return
	}
	c.arrived[input] = true
	c.waiting--
	b.maybeCompleteCheckpoint()
}

// record keeps env, which came on input, as in-flight data of the
// checkpoint in progress if input's copy of the barrier has not come.
func (b *boltInstance) record(input int, env *envelope) {
	c := b.ckpt
	if c.waiting <= 0 || c.arrived[input] || c.snapErr != nil {
		return
	}
	c.channel.PutUvarint(uint64(input))
	if err := putEnvelope(c.channel, env); err != nil {
		c.snapErr = err
		return
	}
	c.recorded++
}

// snapshotVersion is the version of a bolt instance's snapshot: 2 adds
// the inputs drained and ended, which a unit restored after some of its
// inputs ended must know.
const snapshotVersion = 2

// snapshot writes the instance's state: its numbering, watermark and
// router progress, its operation's state and its sync buffer's.
func (b *boltInstance) snapshot(ctx context.Context) ([]byte, error) {
	w := state.NewWriter(nil)
	w.PutUvarint(snapshotVersion)
	w.PutUvarint(b.seq)
	w.PutVarint(b.lastWM)
	w.PutVarint(b.nextTick)
	for i := range b.inputs {
		w.PutBool(b.drainedInputs[i])
		w.PutBool(b.endedInputs[i])
	}
	w.PutVarint(b.router.promise)
	w.PutLen(len(b.router.outputs))
	for i := range b.router.outputs {
		w.PutVarint(b.router.outputs[i].high)
	}
	w.PutUvarint(uint64(b.nextAnchor))
	anchors := slices.Sorted(maps.Keys(b.ckpt.idents))
	w.PutLen(len(anchors))
	for _, a := range anchors {
		id := b.ckpt.idents[a]
		w.PutUvarint(uint64(a))
		w.PutVarint(id.key.Time)
		w.PutUvarint(uint64(id.key.Origin))
		w.PutUvarint(id.key.Seq)
		w.PutVarint(id.key.High)
		w.PutUvarint(uint64(id.children))
	}
	s := b.caps.snapshot
	w.PutBool(s != nil)
	if s != nil {
		ow := state.NewWriter(nil)
		if err := b.attempt(ctx, func() error { ow.Reset(); return s.Snapshot(ow) }); err != nil {
			return nil, fmt.Errorf("operation snapshot: %w", err)
		}
		w.PutBytes(ow.Bytes())
	}
	bw := state.NewWriter(nil)
	if err := b.buf.Snapshot(bw, func(w *state.Writer, env *envelope) error { return putEnvelope(w, env) }); err != nil {
		return nil, fmt.Errorf("sync buffer snapshot: %w", err)
	}
	w.PutBytes(bw.Bytes())
	return w.Bytes(), nil
}

// restore loads a snapshot into an instance that has taken nothing.
func (b *boltInstance) restore(snap []byte) error {
	r := state.NewReader(snap)
	v := r.ReadUvarint()
	if v != 1 && v != snapshotVersion {
		if err := r.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%w: snapshot version %d, want %d", state.ErrMalformed, v, snapshotVersion)
	}
	b.seq = r.ReadUvarint()
	b.lastWM = r.ReadVarint()
	b.nextTick = r.ReadVarint()
	if v >= 2 {
		for i := range b.inputs {
			if r.ReadBool() {
				b.drainedInputs[i] = true
				b.drained++
			}
			if r.ReadBool() {
				b.endedInputs[i] = true
				b.ended++
			}
		}
	}
	b.router.promise = r.ReadVarint()
	if n := r.ReadLen(); n != len(b.router.outputs) && r.Err() == nil {
		return fmt.Errorf("%w: %d outputs, the instance has %d", ErrCheckpointMismatch, n, len(b.router.outputs))
	}
	for i := range b.router.outputs {
		b.router.outputs[i].high = r.ReadVarint()
	}
	b.nextAnchor = operation.Anchor(r.ReadUvarint())
	for range r.ReadLen() {
		a := operation.Anchor(r.ReadUvarint())
		var id ident
		id.key.Time = r.ReadVarint()
		id.key.Origin = uint32(r.ReadUvarint())
		id.key.Seq = r.ReadUvarint()
		id.key.High = r.ReadVarint()
		id.children = uint32(r.ReadUvarint())
		b.ckpt.idents[a] = id
	}
	if hasOp := r.ReadBool(); hasOp {
		opState := r.ReadBytes()
		s := b.caps.snapshot
		if s == nil {
			return fmt.Errorf("%w: the snapshot holds state of an operation that keeps none (%T)", ErrCheckpointMismatch, b.op)
		}
		if err := r.Err(); err != nil {
			return err
		}
		if err := s.Restore(state.NewReader(opState)); err != nil {
			return fmt.Errorf("operation: %w", err)
		}
	}
	bufState := r.ReadBytes()
	if err := r.Err(); err != nil {
		return err
	}
	b.ckpt.inBuffer = map[particleID]struct{}{}
	collect := func(r *state.Reader) (envelope, error) {
		env, err := readEnvelope(r)
		if err == nil && env.p.Meta == nil {
			b.ckpt.inBuffer[particleID{env.p.Origin, env.p.Seq}] = struct{}{}
		}
		return env, err
	}
	if err := b.buf.Restore(state.NewReader(bufState), collect); err != nil {
		return fmt.Errorf("sync buffer: %w", err)
	}
	n := r.ReadLen()
	for range n {
		in := int(r.ReadUvarint())
		env, err := readEnvelope(r)
		if err != nil {
			return fmt.Errorf("in-flight data: %w", err)
		}
		if in >= b.inputs {
			return fmt.Errorf("%w: in-flight data of input %d, the instance has %d", ErrCheckpointMismatch, in, b.inputs)
		}
		b.ckpt.restored = append(b.ckpt.restored, restoredItem{input: in, env: env})
	}
	if err := r.Err(); err != nil {
		return err
	}
	if r.Len() > 0 {
		return fmt.Errorf("%w: %d bytes after the snapshot", state.ErrMalformed, r.Len())
	}
	return nil
}

// pushRestored pushes the restored in-flight data, in the order it came.
func (b *boltInstance) pushRestored(ctx context.Context) {
	if b.ckpt == nil || len(b.ckpt.restored) == 0 {
		return
	}
	now := b.now()
	for i := range b.ckpt.restored {
		it := &b.ckpt.restored[i]
		b.pushOne(ctx, it.input, &it.env, now)
	}
	b.ckpt.restored = nil
	b.release(ctx, b.now())
	b.settle(ctx)
}

// deferInput defers the acknowledgement of an input the operation held to
// the next checkpoint, which holds its effect.
func (b *boltInstance) deferInput(env *envelope, xor uint64) {
	if !env.tracked {
		return
	}
	d := &b.ckpt.deferred
	d.update(env.first.root, env.first.edge^xor)
	for _, a := range env.moreAnchors() {
		d.update(a.root, a.edge^xor)
	}
}

// Meta kinds in a snapshot.
const (
	envData = iota
	envTick
	envSpeed
)

// errMetaState refuses a meta particle a snapshot cannot hold.
var errMetaState = errors.New("topology: a checkpoint cannot hold this meta particle")

// putEnvelope writes env's particle and progress; its trees are left out:
// a restored particle is covered by the checkpoint, not by the acker.
func putEnvelope(w *state.Writer, env *envelope) error {
	w.PutVarint(env.high)
	w.PutBool(env.replay)
	switch m := env.p.Meta.(type) {
	case nil:
		w.PutUvarint(envData)
		return operation.WriteParticle(w, &env.p)
	case metaparticle.Tick:
		w.PutUvarint(envTick)
		w.PutUvarint(uint64(m.Domain))
	case metaparticle.SpeedChange:
		w.PutUvarint(envSpeed)
		w.PutFloat64(m.Speed)
		w.PutBool(m.Paused)
	default:
		return fmt.Errorf("%w: %q (%T)", errMetaState, m.MetaType(), m)
	}
	w.PutVarint(env.p.Time)
	w.PutUvarint(uint64(env.p.Origin))
	w.PutUvarint(env.p.Seq)
	return nil
}

// readEnvelope reads an envelope written by putEnvelope.
func readEnvelope(r *state.Reader) (envelope, error) {
	env := envelope{high: r.ReadVarint(), replay: r.ReadBool()}
	kind := r.ReadUvarint()
	switch kind {
	case envData:
		env.p = operation.ReadParticle(r)
		return env, r.Err()
	case envTick:
		env.p.Meta = metaparticle.Tick{Domain: metaparticle.Domain(r.ReadUvarint())}
	case envSpeed:
		env.p.Meta = metaparticle.SpeedChange{Speed: r.ReadFloat64(), Paused: r.ReadBool()}
	default:
		if r.Err() == nil {
			r.Fail(fmt.Errorf("%w: envelope kind %d", state.ErrMalformed, kind))
		}
		return envelope{}, r.Err()
	}
	env.p.Time = r.ReadVarint()
	env.p.Origin = uint32(r.ReadUvarint())
	env.p.Seq = r.ReadUvarint()
	return env, r.Err()
}
