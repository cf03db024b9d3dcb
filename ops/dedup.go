package ops

import (
	"context"
	"math"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// NewDedup returns an operation that drops repeated readings: a particle
// whose identity (the values of cfg.By) was seen within cfg.Within before
// it, in event time, is acknowledged and not passed on; the others pass
// unchanged. Memory holds the identities of the last Within of the stream.
func NewDedup(cfg DedupConfig) (operation.Operation, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &dedup{by: cfg.By, within: int64(cfg.Within), seen: map[string]int64{}}, nil
}

type dedup struct {
	by     []string
	within int64
	// seen maps identities to the time they were first seen; order lists
	// them in that order, for expiry.
	seen    map[string]int64
	order   []seenID
	head    int
	scratch []byte
	dropped uint64
}

type seenID struct {
	id string
	t  int64
}

func (d *dedup) Process(_ context.Context, in particle.Particle, out operation.Emitter) error {
	d.expire(in.Time)
	d.scratch = d.identity(d.scratch[:0], &in)
	if t, ok := d.seen[string(d.scratch)]; ok && in.Time-t <= d.within {
		d.dropped++
		return nil
	}
	id := string(d.scratch)
	d.seen[id] = in.Time
	d.order = append(d.order, seenID{id: id, t: in.Time})
	out.Emit(in)
	return nil
}

// expire forgets the identities first seen more than within before now.
func (d *dedup) expire(now int64) {
	if now < math.MinInt64+d.within {
		return
	}
	for d.head < len(d.order) && d.order[d.head].t < now-d.within {
		e := d.order[d.head]
		if d.seen[e.id] == e.t {
			delete(d.seen, e.id)
		}
		d.order[d.head] = seenID{}
		d.head++
	}
	if d.head > len(d.order)/2 && d.head > 64 {
		d.order = append(d.order[:0], d.order[d.head:]...)
		d.head = 0
	}
}

func (d *dedup) identity(b []byte, p *particle.Particle) []byte {
	if len(d.by) > 0 {
		return append(operation.AppendKey(b, p, d.by...), 0)
	}
	b = append(b, p.Measurement...)
	for _, t := range p.Tags {
		b = append(append(append(append(b, 0), t.Key...), 0), t.Value...)
	}
	for _, f := range p.Fields {
		b = append(append(append(b, 0), f.Key...), 0)
		b = f.Value.AppendTo(b)
	}
	return b
}
