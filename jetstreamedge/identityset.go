package jetstreamedge

// identity is a data particle's identity, fixed where it was created.
type identity struct {
	origin uint32
	seq    uint64
}

// block is where an identity's bit lives in an identitySet: the
// identities of one origin, 64 sequence numbers to a block.
type block struct {
	origin uint32
	seq    uint64 // the first sequence number of the block, a multiple of 64
}

func blockOf(id identity) (block, uint64) {
	return block{origin: id.origin, seq: id.seq &^ 63}, 1 << (id.seq & 63)
}

// identitySet remembers the last identities added, up to its capacity.
// An origin numbers its particles one after the other, so the identities
// of a window are few blocks of 64 bits: the map stays small enough to
// stay in cache, and the block of the last identity added or forgotten
// is at hand without it.
type identitySet struct {
	blocks map[block]*uint64
	ring   []identity
	next   int
	// The blocks used last by add and by forgetting the oldest identity.
	addAt, forgetAt     block
	addBits, forgetBits *uint64
}

func newIdentitySet(capacity int) *identitySet {
	return &identitySet{blocks: make(map[block]*uint64), ring: make([]identity, 0, capacity)}
}

// bits returns the bits of b, created if create is set, nil if not there.
func (s *identitySet) bits(b block, create bool) *uint64 {
	bits, ok := s.blocks[b]
	if !ok && create {
		bits = new(uint64)
		s.blocks[b] = bits
	}
	return bits
}

// add adds id and reports whether it was new.
func (s *identitySet) add(id identity) bool {
	b, bit := blockOf(id)
	if s.addBits == nil || b != s.addAt {
		s.addAt, s.addBits = b, s.bits(b, true)
	}
	if *s.addBits&bit != 0 {
		return false
	}
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, id)
	} else {
		s.clear(s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % len(s.ring)
		if s.addBits == nil {
			// Forgetting emptied the block of id.
			s.addBits = s.bits(b, true)
		}
	}
	*s.addBits |= bit
	return true
}

// clear forgets id, and the block that id leaves empty.
func (s *identitySet) clear(id identity) {
	b, bit := blockOf(id)
	if s.forgetBits == nil || b != s.forgetAt {
		s.forgetAt, s.forgetBits = b, s.bits(b, false)
		if s.forgetBits == nil {
			return
		}
	}
	*s.forgetBits &^= bit
	if *s.forgetBits == 0 {
		delete(s.blocks, b)
		if s.addBits == s.forgetBits {
			s.addBits = nil
		}
		s.forgetBits = nil
	}
}

func (s *identitySet) remove(ids []identity) {
	for _, id := range ids {
		s.clear(id)
	}
}
