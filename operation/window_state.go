package operation

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/state"
)

// windowStateVersion is the version of the form [Windowed.Snapshot]
// writes.
const windowStateVersion = 2

var _ Snapshotter = (*Windowed[int])(nil)

// gobAcc wraps an accumulator for encoding/gob, which cannot encode a nil
// pointer (a window's accumulator before its first particle) at top level.
type gobAcc[A any] struct{ V A }

// Snapshot implements Snapshotter: the watermark and every window not yet
// complete (bounds, group, count and accumulator), in the order their
// timers fire, so that a restored operation closes them in the same order.
// Accumulators are encoded by the Aggregator when it implements
// [state.Codec] of A, else by encoding/gob in one stream after the
// windows (so that gob describes each type once), which needs A's state
// in exported fields. [Batch] windows encode their particles with a codec
// of their own. Held inputs are not part of it (see [Snapshotter]).
func (o *Windowed[A]) Snapshot(w *state.Writer) error {
	codec, ok := o.agg.(state.Codec[A])
	w.PutUvarint(windowStateVersion)
	o.putBatcher(w)
	w.PutBool(ok)
	w.PutVarint(o.wm)
	timers := o.timers.ordered(metaparticle.EventTime)
	w.PutLen(len(timers))
	var gobs bytes.Buffer
	enc := gob.NewEncoder(&gobs)
	for _, t := range timers {
		p := t.key
		w.PutVarint(p.w.Start)
		w.PutVarint(p.w.End)
		w.PutString(p.key)
		w.PutCount(p.n)
		w.PutBool(o.b.kind.keyed() && o.open[p.key] == p)
		o.putNewest(w, p)
		var err error
		if ok {
			err = codec.EncodeState(w, p.acc)
		} else {
			err = enc.Encode(gobAcc[A]{V: p.acc})
		}
		if err != nil {
			return fmt.Errorf("snapshot window [%d, %d) of group %q: %w", p.w.Start, p.w.End, p.key, err)
		}
	}
	if !ok {
		w.PutBytes(gobs.Bytes())
	}
	return nil
}

func (o *Windowed[A]) putBatcher(w *state.Writer) {
	w.PutUvarint(uint64(o.b.kind))
	w.PutVarint(o.b.size)
	w.PutVarint(o.b.slide)
	w.PutUvarint(uint64(o.b.n))
}

// Restore implements Snapshotter. It refuses, with an error wrapping
// [ErrStateMismatch], the snapshot of a window of another kind or size, or
// one whose accumulators were encoded another way.
func (o *Windowed[A]) Restore(r *state.Reader) error {
	codec, ok := o.agg.(state.Codec[A])
	CheckVersion(r, "window", windowStateVersion)
	at := r.Offset()
	kind, size, slide, n, coded := r.ReadUvarint(), r.ReadVarint(), r.ReadVarint(), r.ReadUvarint(), r.ReadBool()
	if r.Err() == nil && (kind != uint64(o.b.kind) || size != o.b.size || slide != o.b.slide || n != uint64(o.b.n) || coded != ok) {
		r.Fail(fmt.Errorf("%w: another window kind, size or accumulator encoding (at offset %d)", ErrStateMismatch, at))
	}
	wm := r.ReadVarint()
	panes := make([]*pane[A], r.ReadLen())
	opened := make([]bool, len(panes))
	for i := range panes {
		p := &pane[A]{w: Window{Start: r.ReadVarint(), End: r.ReadVarint()}, key: r.ReadString()}
		p.n = r.ReadCount()
		opened[i] = r.ReadBool()
		o.readNewest(r, p)
		if ok && r.Err() == nil {
			acc, err := codec.DecodeState(r)
			if err != nil {
				return fmt.Errorf("restore window [%d, %d) of group %q: %w", p.w.Start, p.w.End, p.key, err)
			}
			p.acc = acc
		}
		panes[i] = p
	}
	if !ok && r.Err() == nil {
		dec := gob.NewDecoder(bytes.NewReader(r.ReadBytes()))
		for _, p := range panes {
			var acc gobAcc[A]
			if err := dec.Decode(&acc); err != nil {
				return fmt.Errorf("restore window [%d, %d) of group %q: gob: %w", p.w.Start, p.w.End, p.key, err)
			}
			p.acc = acc.V
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("restore windows: %w", err)
	}
	o.wm = wm
	o.timers.reserve(metaparticle.EventTime, len(panes))
	if len(o.panes) == 0 && !o.b.kind.keyed() {
		o.panes = make(map[paneID]*pane[A], len(panes))
	}
	for i, p := range panes {
		switch {
		case o.b.kind == count:
			o.timers.Set(metaparticle.EventTime, p, math.MaxInt64)
		default:
			o.timers.Set(metaparticle.EventTime, p, p.w.End-1)
		}
		switch {
		case !o.b.kind.keyed():
			o.panes[paneID{start: p.w.Start, key: p.key}] = p
		case opened[i]:
			o.open[p.key] = p
		}
	}
	return nil
}

// putNewest writes the checkpointed anchor a pane keeps, if any, and the
// identity of its input: with checkpoints, the engine snapshots the
// anchors' identities, and a restored pane derives its result from the
// input it did before.
func (o *Windowed[A]) putNewest(w *state.Writer, p *pane[A]) {
	if len(p.anchors) != 1 || !p.anchors[0].Checkpointed() {
		w.PutUvarint(0)
		return
	}
	w.PutUvarint(uint64(p.anchors[0]))
	w.PutVarint(p.newest.time)
	w.PutUvarint(uint64(p.newest.origin))
	w.PutUvarint(p.newest.seq)
}

// readNewest reads what putNewest wrote into p.
func (o *Windowed[A]) readNewest(r *state.Reader, p *pane[A]) {
	a := Anchor(r.ReadUvarint())
	if a == 0 {
		return
	}
	if !a.Checkpointed() && r.Err() == nil {
		r.Fail(fmt.Errorf("%w: anchor %d not checkpointed", state.ErrMalformed, a))
		return
	}
	p.newest = inputID{time: r.ReadVarint(), origin: uint32(r.ReadUvarint()), seq: r.ReadUvarint()}
	p.anchors = []Anchor{a}
	o.refs[a]++
}

// keyed reports whether windows of kind k are kept per group in open (one
// current window per group) rather than in panes by start.
func (k batcherKind) keyed() bool { return k == session || k == count }
