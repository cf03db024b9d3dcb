package jetstreamedge

import (
	"testing"

	"pgregory.net/rapid"
)

// modelSet is what an identitySet does, plainly: a set and the ring of
// the identities added, the oldest forgotten when it is full.
type modelSet struct {
	set  map[identity]bool
	ring []identity
	cap  int
}

func (m *modelSet) add(id identity) bool {
	if m.set[id] {
		return false
	}
	if len(m.ring) == m.cap {
		delete(m.set, m.ring[0])
		m.ring = m.ring[1:]
	}
	m.ring = append(m.ring, id)
	m.set[id] = true
	return true
}

// An identitySet tells new identities as the model does, over runs of
// sequence numbers with gaps, jumps across blocks, several origins and
// removals.
func TestIdentitySetAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(1, 200).Draw(t, "capacity")
		s := newIdentitySet(capacity)
		m := &modelSet{set: map[identity]bool{}, cap: capacity}
		next := map[uint32]uint64{}
		var added []identity
		for range rapid.IntRange(0, 500).Draw(t, "ops") {
			if len(added) > 0 && rapid.IntRange(0, 9).Draw(t, "remove") == 0 {
				ids := rapid.SliceOfNDistinct(rapid.SampledFrom(added), 1, 5, func(id identity) identity { return id }).Draw(t, "ids")
				s.remove(ids)
				for _, id := range ids {
					delete(m.set, id)
				}
				continue
			}
			origin := rapid.Uint32Range(0, 2).Draw(t, "origin")
			seq := next[origin]
			switch rapid.IntRange(0, 9).Draw(t, "step") {
			case 0:
				seq = rapid.Uint64Range(0, 300).Draw(t, "seq")
			case 1:
				seq += rapid.Uint64Range(0, 130).Draw(t, "jump")
			}
			next[origin] = seq + 1
			id := identity{origin: origin, seq: seq}
			added = append(added, id)
			if got, want := s.add(id), m.add(id); got != want {
				t.Fatalf("add(%v) = %v, want %v", id, got, want)
			}
		}
	})
}

// BenchmarkIdentitySet adds the identities of four origins, each
// numbering its particles one after the other, to a set of the default
// capacity: the filter's work for every particle a receiver gets.
func BenchmarkIdentitySet(b *testing.B) {
	s := newIdentitySet(DefaultDedupWindow)
	var seq uint64
	for i := 0; b.Loop(); i++ {
		if i%4 == 0 {
			seq++
		}
		if !s.add(identity{origin: uint32(i % 4), seq: seq}) {
			b.Fatal("a new identity was taken for a copy")
		}
	}
}
