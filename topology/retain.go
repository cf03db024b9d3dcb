package topology

import (
	"context"
	"fmt"
	"sync"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/particle"
)

// Retainer is the Acknowledger of a source that cannot produce a particle
// again from its input: it keeps every particle emitted through its
// EmitTracked until the particle's tree finishes, and redelivers it from
// memory. That memory is the source's, as the input is: a source that can
// read a particle again (a spool, a file it can seek) keeps less. Its
// zero value is ready; it is safe for concurrent use.
type Retainer struct {
	mu   sync.Mutex
	held map[uint64]particle.Particle
}

var _ Acknowledger = (*Retainer)(nil)

// EmitTracked keeps p under msgID, then emits it through out. msgID must
// be unique among the particles pending.
func (r *Retainer) EmitTracked(out SourceEmitter, p particle.Particle, msgID uint64) error {
	r.mu.Lock()
	if r.held == nil {
		r.held = make(map[uint64]particle.Particle)
	}
	r.held[msgID] = p
	r.mu.Unlock()
	if err := out.EmitTracked(p, msgID); err != nil {
		r.forget(msgID)
		return err
	}
	return nil
}

// Ack implements Acknowledger: it drops the particle.
func (r *Retainer) Ack(msgID uint64) { r.forget(msgID) }

// Fail implements Acknowledger: it drops the particle.
func (r *Retainer) Fail(msgID uint64, _ acker.Reason, _ error) { r.forget(msgID) }

// Redeliver implements Acknowledger.
func (r *Retainer) Redeliver(msgID uint64) (particle.Particle, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.held[msgID]
	if !ok {
		return particle.Particle{}, fmt.Errorf("topology: no particle retained under %d", msgID)
	}
	return p, nil
}

// Len returns the number of particles held.
func (r *Retainer) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.held)
}

func (r *Retainer) forget(msgID uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, msgID)
}

// Retaining returns a Source that runs fn and retains, as a Retainer does,
// every particle fn emits tracked: the ids fn passes to EmitTracked must be
// unique among its particles pending.
func Retaining(fn SourceFunc) Source { return &retainingSource{fn: fn} }

type retainingSource struct {
	Retainer
	fn SourceFunc
}

func (s *retainingSource) Run(ctx context.Context, out SourceEmitter) error {
	return s.fn(ctx, retainingEmitter{SourceEmitter: out, r: &s.Retainer})
}

// retainingEmitter is the SourceEmitter a Retaining source's function
// emits into.
type retainingEmitter struct {
	SourceEmitter
	r *Retainer
}

func (e retainingEmitter) EmitTracked(p particle.Particle, msgID uint64) error {
	return e.r.EmitTracked(e.SourceEmitter, p, msgID)
}
