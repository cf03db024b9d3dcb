package operation

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

var _ state.Codec[[]particle.Particle] = batchAggregator(nil)

// EncodeState implements state.Codec: a window's data particles, which gob
// cannot encode (their values keep their fields unexported).
func (batchAggregator) EncodeState(w *state.Writer, acc []particle.Particle) error {
	w.PutLen(len(acc))
	for i := range acc {
		if err := WriteParticle(w, &acc[i]); err != nil {
			return fmt.Errorf("in a window: %w", err)
		}
	}
	return nil
}

// DecodeState implements state.Codec.
func (batchAggregator) DecodeState(r *state.Reader) ([]particle.Particle, error) {
	n := r.ReadLen()
	if n == 0 {
		return nil, r.Err()
	}
	acc := make([]particle.Particle, n)
	for i := range acc {
		acc[i] = ReadParticle(r)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return acc, nil
}
