package mqtt

import (
	"errors"
	"fmt"

	"github.com/sensorstorm/sensorstorm/particle"
)

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
	}, func(int, error, []byte) {})
	if err != errFound {
		return particle.Particle{}, fmt.Errorf("mqtt: message on %s has no particle %d", m.topic, k)
	}
	return found, nil
}
