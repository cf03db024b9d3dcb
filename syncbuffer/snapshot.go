package syncbuffer

import (
	"fmt"
	"math"
	"slices"

	"github.com/sensorstorm/sensorstorm/state"
)

// snapshotVersion is the form Snapshot writes; Restore reads no other.
const snapshotVersion = 1

// Snapshot writes the buffer's state to w: each input's high-water mark,
// promise, last sign of life and end, the key of the newest item
// released, the meta identities remembered and their horizon, the
// counters, and every item held, in release order, with its key, written
// by enc. It changes nothing in the buffer, and takes a list of the items
// held, 40 bytes each, while it runs. If enc fails, Snapshot returns its
// error and w holds part of a snapshot.
//
// What it writes does not depend on how the buffer indexes its items, so
// a restored buffer writes what the original would. Items are written
// without their input, which the buffer does not keep once it has
// classified them, nor their size, which Restore measures again.
func (b *Buffer[T]) Snapshot(w *state.Writer, enc func(w *state.Writer, item *T) error) error {
	w.PutUvarint(snapshotVersion)
	w.PutLen(len(b.inputs))
	for i := range b.inputs {
		in := &b.inputs[i]
		w.PutVarint(in.high)
		w.PutVarint(in.promise)
		w.PutVarint(in.last)
		w.PutBool(in.sent)
		w.PutBool(in.ended)
	}
	w.PutBool(b.started)
	w.PutBool(b.hasReleased)
	if b.hasReleased {
		putKey(w, math.MinInt64, b.released)
	}
	st := &b.stats
	for _, n := range [...]uint64{st.Pushed, st.Released, st.Late, st.Invalid, st.Duplicate, st.Behind} {
		w.PutUvarint(n)
	}
	w.PutVarint(st.MaxReleased)

	w.PutVarint(b.meta.horizon)
	w.PutLen(b.meta.byTime.Len())
	prev := int64(math.MinInt64)
	b.meta.byTime.Ascend(func(k Key) bool {
		prev = putKey(w, prev, k)
		return true
	})

	w.PutLen(b.Len())
	prev, i := int64(math.MinInt64), 0
	return b.eachHeld(func(h heldItem[T]) error {
		prev = putKey(w, prev, Key{Time: h.e.time, Origin: uint32(h.e.origin >> 32), Seq: h.e.seq})
		if err := enc(w, h.item); err != nil {
			return fmt.Errorf("syncbuffer: snapshot of item %d: %w", i, err)
		}
		i++
		return nil
	})
}

// heldItem is an item held and its entry.
type heldItem[T any] struct {
	e    entry
	item *T
}

// eachHeld calls fn with the items held in release order, until it fails.
// Each index lists its items in order: merging the lists costs less than
// sorting them all.
func (b *Buffer[T]) eachHeld(fn func(h heldItem[T]) error) error {
	var lists [][]heldItem[T]
	list := func(n int, each func(add func(e entry, item *T))) {
		l := make([]heldItem[T], 0, n)
		each(func(e entry, item *T) { l = append(l, heldItem[T]{e, item}) })
		if len(l) > 0 {
			lists = append(lists, l)
		}
	}
	list(b.tree.Len()+1, func(add func(entry, *T)) {
		if b.hasHead {
			add(b.head, b.slot(b.head.slot()))
		}
		b.tree.Ascend(func(e entry) bool {
			add(e, b.slot(e.slot()))
			return true
		})
	})
	for i := range b.inputs {
		list(b.inputs[i].run.len(), func(add func(entry, *T)) {
			b.inputs[i].run.each(func(e entry) { add(e, b.slot(e.slot())) })
		})
	}
	list(b.buckets.len(), b.buckets.ordered)
	for {
		first := -1
		for i, l := range lists {
			if len(l) > 0 && (first < 0 || lessEntry(l[0].e, lists[first][0].e)) {
				first = i
			}
		}
		if first < 0 {
			return nil
		}
		if err := fn(lists[first][0]); err != nil {
			return err
		}
		lists[first] = lists[first][1:]
	}
}

// Restore reads a state written by Snapshot into a buffer that has taken
// nothing yet, made with the same Config and number of inputs; dec reads
// one item written by Snapshot's enc. Call [Buffer.MeasureWith] first if
// the original measured its items: Restore measures each item again.
// The restored buffer then behaves as the original did after Snapshot.
//
// A snapshot of another version or number of inputs is refused with an
// error wrapping [ErrSnapshotVersion] or [ErrSnapshotInputs], bad bytes
// with one wrapping [state.ErrMalformed] or [state.ErrTruncated], and a
// buffer in use with [ErrNotEmpty]. On error the buffer is left as it was.
// Restore reads no further than the snapshot: what follows it in r is the
// caller's.
func (b *Buffer[T]) Restore(r *state.Reader, dec func(r *state.Reader) (T, error)) error {
	if b.started || slices.ContainsFunc(b.inputs, func(in input) bool { return in.ended }) {
		return ErrNotEmpty
	}
	// Restored into a new buffer, so that an error leaves b as it was.
	nb := newBuffer(b.cfg, len(b.inputs), b.key, b.isMeta)
	nb.size = b.size
	if err := nb.restore(r, dec); err != nil {
		return fmt.Errorf("syncbuffer: restore: %w", err)
	}
	*b = *nb
	return nil
}

// restore reads a snapshot into b, which newBuffer made. It stops at the first
// error; every value read is checked, so that bad bytes cannot make the
// buffer inconsistent.
func (b *Buffer[T]) restore(r *state.Reader, dec func(r *state.Reader) (T, error)) error {
	if v := r.ReadUvarint(); r.Err() == nil && v != snapshotVersion {
		r.Fail(fmt.Errorf("%w %d, want %d", ErrSnapshotVersion, v, snapshotVersion))
	}
	if n := r.ReadUvarint(); r.Err() == nil && n != uint64(len(b.inputs)) {
		r.Fail(fmt.Errorf("%w: %d, want %d", ErrSnapshotInputs, n, len(b.inputs)))
	}
	for i := range b.inputs {
		in := &b.inputs[i]
		in.high, in.promise, in.last = r.ReadVarint(), r.ReadVarint(), r.ReadVarint()
		in.sent, in.ended = r.ReadBool(), r.ReadBool()
	}
	b.started = r.ReadBool()
	if b.hasReleased = r.ReadBool(); b.hasReleased {
		b.released = readKey(r, math.MinInt64)
	}
	st := &b.stats
	for _, n := range [...]*uint64{&st.Pushed, &st.Released, &st.Late, &st.Invalid, &st.Duplicate, &st.Behind} {
		*n = r.ReadUvarint()
	}
	st.MaxReleased = r.ReadVarint()

	b.meta.horizon = r.ReadVarint()
	prev := Key{Time: math.MinInt64}
	for i, n := 0, r.ReadLen(); i < n && r.Err() == nil; i++ {
		k := readKey(r, prev.Time)
		switch {
		case r.Err() != nil:
		case i > 0 && !prev.Less(k):
			r.Fail(fmt.Errorf("%w: meta identity %d out of order", state.ErrMalformed, i))
		case b.meta.has(k):
			r.Fail(fmt.Errorf("%w: meta identity %d/%d twice", state.ErrMalformed, k.Origin, k.Seq))
		case k.Time < b.meta.horizon:
			r.Fail(fmt.Errorf("%w: meta identity %d/%d below the horizon", state.ErrMalformed, k.Origin, k.Seq))
		default:
			b.meta.add(k)
		}
		prev = k
	}

	// Written in release order, the items are given new arrival counters
	// in that order, which keeps equal keys in it.
	prev = Key{Time: math.MinInt64}
	for i, n := 0, r.ReadLen(); i < n && r.Err() == nil; i++ {
		k := readKey(r, prev.Time)
		item, err := dec(r)
		if err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if r.Err() != nil {
			break
		}
		b.scratch = item
		got := b.key(&b.scratch)
		switch {
		case k.Less(prev):
			r.Fail(fmt.Errorf("%w: item %d out of release order", state.ErrMalformed, i))
		case b.hasReleased && k.Less(b.released):
			r.Fail(fmt.Errorf("%w: item %d before the newest released", state.ErrMalformed, i))
		case got.Time != k.Time || got.Origin != k.Origin || got.Seq != k.Seq:
			r.Fail(fmt.Errorf("%w: item %d decodes with key %d/%d/%d, written with %d/%d/%d",
				state.ErrMalformed, i, got.Time, got.Origin, got.Seq, k.Time, k.Origin, k.Seq))
		default:
			b.index(b.newEntry(k, b.measure(&b.scratch)), &b.scratch)
		}
		prev = k
	}
	var zero T
	b.scratch = zero
	return r.Err()
}

// putKey writes k's place in release order, its time as the distance from
// prev, at or below it, and returns k's time: keys written in order take
// a few bytes each.
func putKey(w *state.Writer, prev int64, k Key) int64 {
	w.PutUvarint(uint64(k.Time) - uint64(prev))
	w.PutUvarint(uint64(k.Origin))
	w.PutUvarint(k.Seq)
	return k.Time
}

// readKey reads a key written by putKey with the same prev.
func readKey(r *state.Reader, prev int64) Key {
	d := r.ReadUvarint()
	if d > uint64(math.MaxInt64)-uint64(prev) {
		r.Fail(fmt.Errorf("%w: time beyond int64", state.ErrMalformed))
	}
	origin := r.ReadUvarint()
	if origin > math.MaxUint32 {
		r.Fail(fmt.Errorf("%w: origin %d beyond 32 bits", state.ErrMalformed, origin))
	}
	return Key{Time: int64(uint64(prev) + d), Origin: uint32(origin), Seq: r.ReadUvarint()}
}
