package jetstreamedge

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

// FrontierBucket returns the key-value bucket in which the units of
// pipeline record their frontiers.
func FrontierBucket(pipeline string) string { return frontierBucketOf(StreamName(pipeline)) }

func frontierBucketOf(stream string) string { return stream + "_FRONTIERS" }

// ReadFrontiers returns the frontiers the units of the pipeline whose
// stream is stream (StreamName) recorded, by consumer: the event time
// before which each unit finished every particle it received. A unit
// that recorded none is missing.
func ReadFrontiers(ctx context.Context, js jetstream.JetStream, stream string) (map[string]time.Time, error) {
	kv, err := js.KeyValue(ctx, frontierBucketOf(stream))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jetstreamedge: frontiers of %s: %w", stream, err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("jetstreamedge: frontiers of %s: %w", stream, err)
	}
	f := frontiers{kv: kv}
	out := map[string]time.Time{}
	for consumer := range keys.Keys() {
		k, ok, err := f.load(ctx, consumer)
		if err != nil {
			return nil, err
		}
		if ok {
			out[consumer] = time.Unix(0, k.Time).UTC()
		}
	}
	return out, nil
}

// frontiers records, per unit (its consumer's name), the unit's frontier:
// a position in release order before which every data particle the unit
// ever received completed its tree, and before which a particle it did
// not receive would have been late or behind (edge.Feed.Released). A
// unit acknowledges a message only once the frontier recorded is past
// every particle it handed on from it, so that a unit that moves, whose
// identity filter starts empty, still drops the copies of the particles
// in the messages its predecessors acknowledged: the frontier it starts
// from is past them all.
type frontiers struct {
	kv jetstream.KeyValue
}

// frontierLen is the length of a recorded frontier: time, origin and
// sequence, big-endian.
const frontierLen = 8 + 4 + 8

// load returns the frontier recorded for consumer, and false if there is
// none.
func (f *frontiers) load(ctx context.Context, consumer string) (syncbuffer.Key, bool, error) {
	e, err := f.kv.Get(ctx, consumer)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return syncbuffer.Key{}, false, nil
	case err != nil:
		return syncbuffer.Key{}, false, err
	}
	v := e.Value()
	if len(v) != frontierLen {
		return syncbuffer.Key{}, false, fmt.Errorf("jetstreamedge: frontier of %s: %d bytes, want %d", consumer, len(v), frontierLen)
	}
	return syncbuffer.Key{
		Time:   int64(binary.BigEndian.Uint64(v)),
		Origin: binary.BigEndian.Uint32(v[8:]),
		Seq:    binary.BigEndian.Uint64(v[12:]),
	}, true, nil
}

// save records k as the frontier of consumer.
func (f *frontiers) save(ctx context.Context, consumer string, k syncbuffer.Key) error {
	var v [frontierLen]byte
	binary.BigEndian.PutUint64(v[:], uint64(k.Time))
	binary.BigEndian.PutUint32(v[8:], k.Origin)
	binary.BigEndian.PutUint64(v[12:], k.Seq)
	_, err := f.kv.Put(ctx, consumer, v[:])
	return err
}

// after returns the position right after k in release order.
func after(k syncbuffer.Key) syncbuffer.Key {
	switch {
	case k.Seq < math.MaxUint64:
		k.Seq++
	case k.Origin < math.MaxUint32:
		k.Origin, k.Seq = k.Origin+1, 0
	case k.Time < math.MaxInt64:
		k.Time, k.Origin, k.Seq = k.Time+1, 0, 0
	}
	return k
}

// span is where the data particles of a message lie in release order.
type span struct {
	first, last syncbuffer.Key
	ok          bool // there is a data particle
}

// keyOf returns p's position in release order.
func keyOf(p *particle.Particle) syncbuffer.Key {
	return syncbuffer.Key{Time: p.Time, Origin: p.Origin, Seq: p.Seq}
}

// before reports whether every data particle of s lies before frontier;
// known tells whether there is a frontier.
func (s span) before(frontier syncbuffer.Key, known bool) bool {
	return !s.ok || known && s.last.Less(frontier)
}

func (s *span) add(k syncbuffer.Key) {
	switch {
	case !s.ok:
		s.first, s.last, s.ok = k, k, true
	case k.Less(s.first):
		s.first = k
	case s.last.Less(k):
		s.last = k
	}
}
