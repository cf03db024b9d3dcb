package jetstreamedge

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// Reassign tells the inlets that Config.Owns may answer differently now.
// An inlet that does not pull starts pulling for a unit its worker owns
// now. An inlet that pulls for a unit its worker no longer owns hands it
// over: it stops pulling, gives back the messages it took and did not
// deliver (negative acknowledgements: the server delivers them again at
// once), and returns edge.ErrReleased, so that the instance fails what
// it had not finished (given back the same way) and starts afresh; then
// it unpins the consumer, and the server pins the worker that pulls now,
// the owner, which receives the messages given back before any newer one
// (see catchUp).
func (t *Transport) Reassign() {
	t.mu.Lock()
	defer t.mu.Unlock()
	close(t.reassigned)
	t.reassigned = make(chan struct{})
}

// reassignment returns the channel closed at the next Reassign.
func (t *Transport) reassignment() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reassigned
}

// owns reports whether this worker owns the unit of consumer now: none
// while it is fenced.
func (t *Transport) owns(consumer string, pulling bool) bool {
	return !t.fence.up() && (t.cfg.Owns == nil || t.cfg.Owns(consumer, pulling))
}

// Units returns the consumers of every bolt instance fed through the
// transport: every worker's units, the same list on every worker.
func (t *Transport) Units() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	units := make([]string, len(t.inlets))
	for i, in := range t.inlets {
		units[i] = in.consumer
	}
	return units
}

// HeldUnits returns, sorted, the consumers of the units this worker holds: those
// it pulls for, and those it handed over (see Reassign) and has not
// unpinned yet, which it does once the instance gave back what it had not
// finished.
func (t *Transport) HeldUnits() []string {
	return t.unitsWhere(func(in *inlet) bool { return in.holding.Load() })
}

// pinHeader carries the id of the pin a message was delivered under.
const pinHeader = "Nats-Pin-Id"

// EndedUnits returns, sorted, the consumers whose instances ended their streams on
// this worker.
func (t *Transport) EndedUnits() []string {
	return t.unitsWhere(func(in *inlet) bool { return in.ended.Load() })
}

// unitsWhere returns, sorted, the consumers of the inlets for which keep
// is true.
func (t *Transport) unitsWhere(keep func(*inlet) bool) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var units []string
	for _, in := range t.inlets {
		if keep(in) {
			units = append(units, in.consumer)
		}
	}
	slices.Sort(units)
	return units
}

// finish marks the unit ended once its instance ended its streams (ctx's
// cause is edge.ErrEnded), and unpins the consumer, so that the other
// workers' copies of the instance, which their owners let pull once the
// unit ended somewhere, receive the ends of stream sent again and end too.
func (in *inlet) finish(ctx context.Context, cons jetstream.Consumer) {
	if !errors.Is(context.Cause(ctx), edge.ErrEnded) {
		return
	}
	in.markEnded(ctx, cons, in.pin)
}

// markEnded marks the unit ended and unpins pin from cons, if any, for at
// most a pinned TTL: past it, the pin expires by itself.
func (in *inlet) markEnded(ctx context.Context, cons jetstream.Consumer, pin string) {
	in.ended.Store(true)
	if pin == "" {
		return
	}
	unpinCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(in.t.cfg.PinnedTTL, time.Second))
	defer cancel()
	if err := in.unpin(unpinCtx, cons, pin); err != nil {
		in.t.cfg.Logger.Debug("unpinning an ended unit failed", "consumer", in.consumer, "err", err)
	}
}

// awaitOwnership returns once this worker owns the unit. If this inlet
// handed the unit over last, it first unpins the consumer, unless another
// worker was pinned meanwhile.
func (in *inlet) awaitOwnership(ctx context.Context, cons jetstream.Consumer) error {
	t := in.t
	in.pin = ""
	if pin := in.released; pin != "" && !t.fence.up() {
		in.released = ""
		if err := in.unpin(ctx, cons, pin); err != nil {
			// The pin expires after PinnedTTL without pulls.
			t.cfg.Logger.Warn("unpinning a unit handed over failed", "consumer", in.consumer, "err", err)
		}
	}
	in.holding.Store(false)
	if !t.owns(in.consumer, false) {
		// Given away since Acquire: the next holding restores afresh.
		return edge.ErrReleased
	}
	return in.Acquire(ctx)
}

// unpin unpins the consumer if it is pinned with pin.
func (in *inlet) unpin(ctx context.Context, cons jetstream.Consumer, pin string) error {
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	for _, g := range info.PriorityGroups {
		if g.Group == PriorityGroup && g.PinnedClientID == pin {
			return in.t.stream.UnpinConsumer(ctx, in.consumer, PriorityGroup)
		}
	}
	return nil
}

// release hands the unit over (see Transport.Reassign): it stops the
// puller after the pull under way, so that nothing the server sends goes
// unreceived, gives back what was not delivered, held back in c or s or
// queued in q, and returns edge.ErrReleased.
func (in *inlet) release(p *puller, q *msgQueue, c *catchUp, s *sequencer) error {
	t := in.t
	close(p.stop)
	<-p.done
	back := append(q.take(), s.reset()...)
	for _, h := range c.held {
		back = append(back, h.m)
	}
	c.held, c.holding = nil, false
	if !t.fence.up() {
		for _, m := range back {
			_ = m.Nak()
		}
	}
	in.released = in.pin
	t.cfg.Logger.Info("unit handed over", "consumer", in.consumer, "given_back", len(back))
	return edge.ErrReleased
}
