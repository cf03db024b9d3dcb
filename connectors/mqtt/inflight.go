package mqtt

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sensorstorm/sensorstorm/particle"
)

// inflight numbers the messages whose particles are in the pipeline. A
// particle's message id is its message's number (high 32 bits) and its
// place among the message's particles (low 32 bits): eight bytes for the
// engine to keep, where a pointer in an interface would take sixteen.
// Numbers are reused once their message is finished; the engine never
// uses an id after its tree finished, and a message finishes only after
// all of its particles' trees did.
type inflight struct {
	mu   sync.Mutex
	msgs []*message // by number; 0 is never used
	free []uint32
}

// add numbers m.
func (f *inflight) add(m *message) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.free); n > 0 {
		i := f.free[n-1]
		f.free = f.free[:n-1]
		f.msgs[i] = m
		return i
	}
	if len(f.msgs) == 0 {
		f.msgs = append(f.msgs, nil)
	}
	f.msgs = append(f.msgs, m)
	return uint32(len(f.msgs) - 1)
}

// get returns the message of a particle's message id.
func (f *inflight) get(msgID uint64) *message {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := msgID >> 32; i < uint64(len(f.msgs)) {
		return f.msgs[i]
	}
	return nil
}

// remove frees number i.
func (f *inflight) remove(i uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs[i] = nil
	f.free = append(f.free, i)
}

// particleID returns the message id of m's k-th particle.
func particleID(m *message, k uint32) uint64 { return uint64(m.number)<<32 | uint64(k) }

// errFound stops redecode's pass at the particle it looks for.
var errFound = errors.New("mqtt: particle found")

// redecode decodes m's payload again, with a decoder of its own, and
// returns its k-th particle: the same as the first time, since time-less
// readings take the receive time recorded in m.
func redecode(cfg PayloadConfig, m *message, k uint32) (particle.Particle, error) {
	d, err := newDecoder(cfg)
	if err != nil {
		return particle.Particle{}, err
	}
	var (
		found particle.Particle
		n     uint32
	)
	err = d.decode([]*message{m}, func(_ int, p particle.Particle) error {
		if n == k {
			found = p
			return errFound
		}
		n++
		return nil
	}, func(int, error) {})
	if err != errFound {
		return particle.Particle{}, fmt.Errorf("mqtt: message on %s has no particle %d", m.topic, k)
	}
	return found, nil
}
