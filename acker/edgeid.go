package acker

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
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
	r rand.PCG
}

// NewEdgeIDs returns a generator seeded from crypto/rand, so that
// generators of different goroutines are independent. The generator is a
// 128-bit PCG: fast, and far beyond what acking needs (Storm draws edge ids
// from a 48-bit linear congruential generator); ids need not be secret.
func NewEdgeIDs() *EdgeIDs {
	var seed [16]byte
	_, _ = crand.Read(seed[:]) // never fails: it crashes the program instead
	g := new(EdgeIDs)
	g.r.Seed(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:]))
	return g
}

// Next returns a random non-zero edge id.
func (g *EdgeIDs) Next() uint64 {
	for {
		if id := g.r.Uint64(); id != 0 {
			return id
		}
	}
}
