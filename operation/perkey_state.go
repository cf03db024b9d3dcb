package operation

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/state"
)

// keyedStateVersion is the version of the form [Keyed.Snapshot] writes.
const keyedStateVersion = 1

var _ Snapshotter = (*Keyed)(nil)

// Snapshot implements Snapshotter: the stream clock's latest tick, the
// number of keys evicted, and every live key, least recently used first,
// with the event time of its latest particle, the stream clock's tick
// before it, and its operation's snapshot when the operation is a
// [Snapshotter]. An operation that is not keeps no state: its key is
// restored with a new one, so that it is evicted and flushed as it would
// have been.
func (k *Keyed) Snapshot(w *state.Writer) error {
	w.PutUvarint(keyedStateVersion)
	w.PutVarint(k.now)
	w.PutUvarint(k.evicted)
	w.PutLen(len(k.live))
	var op state.Writer
	for e := k.head; e != nil; e = e.next {
		w.PutString(e.key)
		w.PutVarint(e.last)
		w.PutVarint(e.seen)
		s, ok := e.op.(Snapshotter)
		w.PutBool(ok)
		if !ok {
			continue
		}
		// Length-prefixed, so that an operation's Restore reads its own
		// bytes and no further.
		op.Reset()
		if err := s.Snapshot(&op); err != nil {
			return fmt.Errorf("snapshot key %q: %w", e.key, err)
		}
		w.PutBytes(op.Bytes())
	}
	return nil
}

// Restore implements Snapshotter: it makes each key's operation with the
// Factory and restores its state. It refuses, with an error wrapping
// [ErrStateMismatch], a key whose operation was a Snapshotter and is not
// now, or the reverse.
func (k *Keyed) Restore(r *state.Reader) error {
	CheckVersion(r, "per-key", keyedStateVersion)
	now, evicted, n := r.ReadVarint(), r.ReadUvarint(), r.ReadLen()
	if len(k.live) == 0 {
		k.live = make(map[string]*keyed, n)
	}
	for range n {
		at := r.Offset()
		key, last, seen, has := r.ReadString(), r.ReadVarint(), r.ReadVarint(), r.ReadBool()
		var b []byte
		if has {
			b = r.ReadBytes()
		}
		if r.Err() != nil {
			break
		}
		if _, ok := k.live[key]; ok {
			r.Fail(fmt.Errorf("%w: key %q twice (at offset %d)", state.ErrMalformed, key, at))
			break
		}
		e := k.add(key, last)
		e.seen = seen
		s, ok := e.op.(Snapshotter)
		if ok != has {
			r.Fail(fmt.Errorf("%w: the operation of key %q keeps state: %v, its snapshot: %v (at offset %d)", ErrStateMismatch, key, ok, has, at))
			break
		}
		if !ok {
			continue
		}
		opr := state.NewReader(b)
		if err := s.Restore(opr); err != nil {
			return fmt.Errorf("restore key %q: %w", key, err)
		}
		if opr.Len() > 0 {
			r.Fail(fmt.Errorf("%w: %d bytes of key %q's state left unread (at offset %d)", state.ErrMalformed, opr.Len(), key, at))
			break
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("restore keys: %w", err)
	}
	k.now, k.evicted = now, evicted
	return nil
}
