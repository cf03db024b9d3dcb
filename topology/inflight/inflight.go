// Package inflight is for the authors of sources that acknowledge their
// input (topology.Acknowledger): it numbers the inputs whose particles are
// pending, so that a particle's message id names its input and its place
// in it.
//
//	var pending inflight.Table[*message]
//	n := pending.Add(m)
//	out.EmitTracked(p, inflight.ID(n, k)) // the k-th particle of m
//	...
//	m, ok := pending.Get(msgID)           // in Ack, Fail, Redeliver
//
// AddAll, GetAll and RemoveAll do the same for many inputs under one
// lock: for a source that emits inputs in batches and takes its
// acknowledgements so (topology.BatchAcknowledger), the lock taken once an
// input is a cost to count.
//
// # What it is not
//
// Not a queue and not a retry policy: the engine retries and times out
// trees; the Table only maps ids back to inputs.
package inflight

import "sync"

// Table numbers a source's inputs (messages, requests) while their
// particles are pending, so that a particle's message id names its input
// and its place in it in eight bytes: ID(number, k), where a
// pointer in an interface would take sixteen. Numbers start at 1 and are
// reused once their input is removed: the engine never uses a message id
// after its tree finished, so a source that removes an input only after
// all of its particles finished never sees a number reused under it. Its
// zero value is ready; it is safe for concurrent use.
type Table[T any] struct {
	mu   sync.Mutex
	ins  []entry[T] // by number; 0 is never used
	free []uint32
}

type entry[T any] struct {
	v    T
	live bool
}

// Add numbers v and returns its number, never 0.
func (f *Table[T]) Add(v T) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.add(v)
}

// AddAll numbers every v of vs under one lock and appends their numbers to
// numbers, in order.
func (f *Table[T]) AddAll(numbers []uint32, vs []T) []uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range vs {
		numbers = append(numbers, f.add(v))
	}
	return numbers
}

func (f *Table[T]) add(v T) uint32 {
	if n := len(f.free); n > 0 {
		i := f.free[n-1]
		f.free = f.free[:n-1]
		f.ins[i] = entry[T]{v, true}
		return i
	}
	if len(f.ins) == 0 {
		f.ins = append(f.ins, entry[T]{})
	}
	f.ins = append(f.ins, entry[T]{v, true})
	return uint32(len(f.ins) - 1)
}

// Get returns the input of a particle's message id, or (zero, false) when
// its number names none.
func (f *Table[T]) Get(msgID uint64) (T, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.get(msgID)
}

// GetAll appends to vs the inputs of the message ids that name one, in
// order, under one lock: a source acknowledging a batch of particles
// (topology.BatchAcknowledger) takes it once, not once a particle.
func (f *Table[T]) GetAll(vs []T, msgIDs []uint64) []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range msgIDs {
		if v, ok := f.get(id); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

func (f *Table[T]) get(msgID uint64) (T, bool) {
	if i := msgID >> 32; i < uint64(len(f.ins)) && f.ins[i].live {
		return f.ins[i].v, true
	}
	var zero T
	return zero, false
}

// Remove frees number i for reuse.
func (f *Table[T]) Remove(i uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remove(i)
}

// RemoveAll frees the numbers of is for reuse, under one lock.
func (f *Table[T]) RemoveAll(is []uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, i := range is {
		f.remove(i)
	}
}

func (f *Table[T]) remove(i uint32) {
	if i == 0 || int(i) >= len(f.ins) || !f.ins[i].live {
		return
	}
	f.ins[i] = entry[T]{}
	f.free = append(f.free, i)
}

// Len returns the number of inputs numbered.
func (f *Table[T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ins) - min(len(f.ins), 1) - len(f.free)
}

// ID returns the message id of the k-th particle of the input numbered
// number.
func ID(number, k uint32) uint64 { return uint64(number)<<32 | uint64(k) }

// Place returns k, the place of a message id's particle in its input.
func Place(msgID uint64) uint32 { return uint32(msgID) }
