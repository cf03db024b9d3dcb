package acker

import (
	crand "crypto/rand"
	"encoding/binary"
)

// EdgeIDs produces edge ids: random, non-zero 64-bit values. Randomness is
// what makes XOR acking work: a tree's value returns to zero when every edge
// has been xored in twice (once when emitted, once when acked), and reaches
// zero earlier only if a set of distinct random ids happens to xor to zero,
// which has probability 2^-64 per update. Root ids, in contrast, are unique
// by construction (see [RootID]).
//
// An EdgeIDs is not safe for concurrent use: give each goroutine its own,
// so that producing an id takes no lock.
type EdgeIDs struct {
	state uint64
}

// NewEdgeIDs returns a generator seeded from crypto/rand, so that
// generators of different goroutines are independent. The generator is
// SplitMix64: a counter with a random start, scrambled by a bijection, so
// that one generator never repeats an id within 2^64 and two meet only if
// their random starts lie within as many steps as they draw. It is two
// multiplications per id, cheap enough to inline where every particle
// needs two ids, and far beyond what acking needs (Storm draws edge ids
// from a 48-bit linear congruential generator); ids need not be secret.
func NewEdgeIDs() *EdgeIDs {
	var seed [8]byte
	_, _ = crand.Read(seed[:]) // never fails: it crashes the program instead
	return &EdgeIDs{state: binary.LittleEndian.Uint64(seed[:])}
}

// Next returns a random non-zero edge id.
func (g *EdgeIDs) Next() uint64 {
	for {
		g.state += 0x9e3779b97f4a7c15
		z := g.state
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		if z ^= z >> 31; z != 0 {
			return z
		}
	}
}
