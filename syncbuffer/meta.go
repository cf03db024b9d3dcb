package syncbuffer

import (
	"math"

	"github.com/google/btree"
)

// metaDegree is small because meta items are rare next to data.
const metaDegree = 8

type metaID struct {
	origin uint32
	seq    uint64
}

// metaSet remembers meta identities until the watermark has passed them by
// the retention. The map answers membership; the tree orders identities by
// time so that expiry touches only what expires.
type metaSet struct {
	ids     map[metaID]struct{}
	byTime  *btree.BTreeG[Key]
	horizon int64 // identities older than this are forgotten; never decreases
}

func newMetaSet() metaSet {
	return metaSet{
		ids:     make(map[metaID]struct{}),
		byTime:  btree.NewG(metaDegree, Key.Less),
		horizon: math.MinInt64,
	}
}

func (s *metaSet) has(k Key) bool {
	_, ok := s.ids[metaID{k.Origin, k.Seq}]
	return ok
}

func (s *metaSet) add(k Key) {
	s.ids[metaID{k.Origin, k.Seq}] = struct{}{}
	s.byTime.ReplaceOrInsert(k)
}

// expire forgets identities older than horizon.
func (s *metaSet) expire(horizon int64) {
	if horizon <= s.horizon {
		return
	}
	s.horizon = horizon
	for {
		k, ok := s.byTime.Min()
		if !ok || k.Time >= horizon {
			return
		}
		s.byTime.DeleteMin()
		delete(s.ids, metaID{k.Origin, k.Seq})
	}
}
