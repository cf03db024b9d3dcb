package jetstreamedge

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/internal/jsretry"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// outlet publishes the batches for one bolt instance, numbered in the
// order sent. A publish the server does not confirm is tried again in
// place, and the batches after it wait, until it is confirmed or
// Config.RetryFor passed: a NATS node away is not the particles' fault.
// Batches published before the failure was known may be stored before
// the one tried again; the receiver restores the order by number.
type outlet struct {
	t       *Transport
	subject string
	sender  uint64

	// mu guards what follows, and numbers go out in order under it. It
	// is never held across a network round trip: nats.go's error handler
	// has it taken, on the one goroutine that confirms every outlet's
	// publishes (or, for a publish that timed out, on one of its own).
	mu     sync.Mutex
	number uint64     // of the last message published
	failed []*pending // messages to publish again, in number order
	// retried is closed once failed is empty again; nil while nothing
	// is tried again.
	retried chan struct{}
	// synced is closed once the synchronous publish of a batch that
	// carries Drained or EOS ended; nil while none is under way.
	synced chan struct{}

	// flushMu guards what follows. The acknowledgement handler takes it,
	// so it is never held while calling nats.go.
	flushMu sync.Mutex
	sent    uint64   // the number of the last message sent
	open    []uint64 // numbers sent, neither confirmed nor given up, in order
	// lost is the lowest number given up, 0 for none: the settled mark
	// never passes it.
	lost    uint64
	flushes []*flushing
}

// flushing is a Flush waiting for the messages up to a number.
type flushing struct {
	upTo uint64
	done chan struct{}
	err  error // the first of those messages lost
}

var _ edge.Flusher = (*outlet)(nil)

// Flush implements edge.Flusher: the done callbacks of the batches sent
// before it have run when it returns nil.
func (o *outlet) Flush(ctx context.Context) error {
	o.flushMu.Lock()
	f := &flushing{upTo: o.sent, done: make(chan struct{})}
	if !o.openUpTo(f.upTo) {
		o.flushMu.Unlock()
		return nil
	}
	o.flushes = append(o.flushes, f)
	o.flushMu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		o.flushMu.Lock()
		o.flushes = slices.DeleteFunc(o.flushes, func(g *flushing) bool { return g == f })
		o.flushMu.Unlock()
		return ctx.Err()
	}
}

// opened counts number, the next, sent and not yet confirmed, and returns
// the settled mark of its message: every number below it was confirmed.
// A number given up holds the mark back for good: a receiver that misses
// it must not take it for stored.
func (o *outlet) opened(number uint64) (settled uint64) {
	o.flushMu.Lock()
	defer o.flushMu.Unlock()
	settled = number
	if len(o.open) > 0 {
		settled = o.open[0]
	}
	if o.lost != 0 {
		settled = min(settled, o.lost)
	}
	o.open = append(o.open, number)
	o.sent = number
	return settled
}

// settled takes number out of the open messages, confirmed (err nil) or
// lost, and ends the flushes that waited for it last.
func (o *outlet) settled(number uint64, err error) {
	o.flushMu.Lock()
	defer o.flushMu.Unlock()
	if i, ok := slices.BinarySearch(o.open, number); ok {
		o.open = slices.Delete(o.open, i, i+1)
	}
	if err != nil && (o.lost == 0 || number < o.lost) {
		o.lost = number
	}
	o.flushes = slices.DeleteFunc(o.flushes, func(f *flushing) bool {
		if err != nil && number <= f.upTo && f.err == nil {
			f.err = err
		}
		if o.openUpTo(f.upTo) {
			return false
		}
		close(f.done)
		return true
	})
}

// openUpTo reports whether a message numbered upTo or less is open.
func (o *outlet) openUpTo(upTo uint64) bool {
	return len(o.open) > 0 && o.open[0] <= upTo
}

func newOutlet(t *Transport, subject string) *outlet {
	// Zero is no sender: a receiver takes it for one like any other.
	return &outlet{t: t, subject: subject, sender: rand.Uint64() | 1}
}

// pending is a message published and not yet confirmed.
type pending struct {
	o         *outlet
	ctx       context.Context // Send's: retries end with it
	msg       *nats.Msg
	number    uint64
	done      func(error)
	particles int
	since     time.Time // when it first failed
}

// outOfTime notes p's first failure and tells whether retryFor has
// passed since.
func (p *pending) outOfTime(retryFor time.Duration) bool {
	now := time.Now()
	if p.since.IsZero() {
		p.since = now
	}
	return now.Sub(p.since) >= retryFor
}

// confirmed reports the fate of a published message: the error handler
// and the acknowledgement handler of the async publisher.
func (t *Transport) confirmed(m *nats.Msg, err error) {
	v, ok := t.dones.LoadAndDelete(m)
	if !ok {
		return
	}
	p := v.(*pending)
	if err != nil {
		p.o.retry(p, err)
		return
	}
	t.published(p)
}

// published counts p confirmed and completes it.
func (t *Transport) published(p *pending) {
	<-t.inflight
	t.stats.Published.Add(1)
	t.stats.PublishedBytes.Add(uint64(len(p.msg.Data)))
	t.stats.PublishedParticles.Add(uint64(p.particles))
	p.done(nil)
	p.o.settled(p.number, nil)
}

// Send implements edge.Outlet. Batches go out asynchronously, in
// order on the connection; one that carries Drained or EOS is published
// synchronously. Send waits while a failed publish is tried again or a
// synchronous one is under way. While the transport is fenced (Fence),
// it returns ErrFenced, also from those waits.
func (o *outlet) Send(ctx context.Context, b *edge.Batch, done func(error)) error {
	t := o.t
	// A fenced worker publishes nothing more: what it derives now may come
	// from state that another worker took over.
	fenced, raised := t.fence.state()
	if fenced {
		return ErrFenced
	}
	e := t.encoders.Get().(*encoder)
	data, err := e.appendBatch(nil, stamp{sender: o.sender}, b)
	t.encoders.Put(e)
	if err != nil {
		return err
	}
	select {
	case t.inflight <- struct{}{}:
	case <-raised:
		return ErrFenced
	case <-ctx.Done():
		return ctx.Err()
	}
	o.mu.Lock()
	for o.retried != nil || o.synced != nil {
		wait := cmp.Or(o.retried, o.synced)
		o.mu.Unlock()
		select {
		case <-wait:
		case <-raised:
			<-t.inflight
			return ErrFenced
		case <-ctx.Done():
			<-t.inflight
			return ctx.Err()
		}
		o.mu.Lock()
	}
	if t.fence.up() {
		o.mu.Unlock()
		<-t.inflight
		return ErrFenced
	}
	o.number++
	setStamp(data, o.number, o.opened(o.number))
	p := &pending{o: o, ctx: ctx, msg: &nats.Msg{Subject: o.subject, Data: data}, number: o.number, done: done, particles: len(b.Items)}
	if b.Drained || b.EOS {
		o.synced = make(chan struct{})
		o.mu.Unlock()
		err := o.publishSync(p)
		o.mu.Lock()
		close(o.synced)
		o.synced = nil
		o.mu.Unlock()
		if err != nil {
			err = fmt.Errorf("jetstreamedge: publish to %s: %w", o.subject, err)
			o.settled(p.number, err)
			<-t.inflight
			return err
		}
		t.published(p)
		return nil
	}
	defer o.mu.Unlock()
	t.dones.Store(p.msg, p)
	// Without options: they give the message a header, which the server
	// then parses. nats.go tries a publish nobody answered again by
	// itself, twice, which may store it after later ones: receivers
	// restore the order.
	if _, err := t.js.PublishMsgAsync(p.msg); err != nil {
		if _, ok := t.dones.LoadAndDelete(p.msg); ok {
			o.retryLocked(p, err)
		}
		// Otherwise the error handler ran first and reported it.
	}
	return nil
}

// publishSync publishes p and waits for its confirmation, trying again
// until it comes, p's context ends or Config.RetryFor passed.
func (o *outlet) publishSync(p *pending) error {
	t := o.t
	b := jsretry.Backoff{}
	for {
		if t.fence.up() {
			return ErrFenced
		}
		ctx, cancel := context.WithTimeout(p.ctx, t.cfg.PublishTimeout)
		_, err := t.js.PublishMsg(ctx, p.msg, jetstream.WithRetryAttempts(0))
		cancel()
		switch {
		case err == nil:
			return nil
		case p.ctx.Err() != nil:
			return p.ctx.Err()
		}
		t.stats.PublishFailed.Add(1)
		if p.outOfTime(t.cfg.RetryFor) {
			return fmt.Errorf("%w: gave up after %s: %w", ErrPublishFailed, t.cfg.RetryFor, err)
		}
		t.cfg.Logger.Warn("publish failed: trying again", "subject", o.subject, "number", p.number, "err", err)
		if err := b.Wait(p.ctx); err != nil {
			return err
		}
	}
}

// retry has p published again, in number order with the others that
// failed, while Send waits.
func (o *outlet) retry(p *pending, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retryLocked(p, err)
}

func (o *outlet) retryLocked(p *pending, err error) {
	o.t.stats.PublishFailed.Add(1)
	o.t.cfg.Logger.Debug("publish failed: trying again in place", "subject", o.subject, "number", p.number, "err", err)
	i, _ := slices.BinarySearchFunc(o.failed, p.number, func(q *pending, n uint64) int { return cmp.Compare(q.number, n) })
	o.failed = slices.Insert(o.failed, i, p)
	if o.retried == nil {
		o.retried = make(chan struct{})
		go o.publishFailed()
	}
}

// publishFailed publishes the failed messages again, in number order,
// pipelined, round after round with backoff between them, until none is
// left.
func (o *outlet) publishFailed() {
	t := o.t
	b := jsretry.Backoff{}
	for {
		o.mu.Lock()
		round := o.failed
		o.failed = nil
		if len(round) == 0 {
			close(o.retried)
			o.retried = nil
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		// Derived before the fence, these wait until it lifts: receivers
		// drop them as the copies they then are of what the units' next
		// holders derived.
		t.AwaitUnfenced(round[0].ctx)
		futures := make([]jetstream.PubAckFuture, len(round))
		errs := make([]error, len(round))
		for i, p := range round {
			futures[i], errs[i] = t.js.PublishMsgAsync(p.msg)
		}
		var (
			again []*pending
			first error
		)
		for i, p := range round {
			if errs[i] == nil {
				select {
				case <-futures[i].Ok():
					t.published(p)
					continue
				case errs[i] = <-futures[i].Err():
				case <-p.ctx.Done():
					errs[i] = p.ctx.Err()
				}
			}
			switch {
			case p.ctx.Err() != nil:
				o.gaveUp(p, p.ctx.Err())
			case p.outOfTime(t.cfg.RetryFor):
				o.gaveUp(p, fmt.Errorf("%w: gave up after %s: %w", ErrPublishFailed, t.cfg.RetryFor, errs[i]))
			default:
				t.stats.PublishFailed.Add(1)
				again = append(again, p)
				if first == nil {
					first = errs[i]
				}
			}
		}
		if len(again) == 0 {
			b = jsretry.Backoff{}
			continue
		}
		t.cfg.Logger.Warn("publish failed: trying again in place", "subject", o.subject, "from", again[0].number, "messages", len(again), "err", first)
		o.mu.Lock()
		o.failed = append(again, o.failed...)
		slices.SortFunc(o.failed, func(a, b *pending) int { return cmp.Compare(a.number, b.number) })
		o.mu.Unlock()
		if err := b.Wait(again[0].ctx); err != nil {
			// The run ends: the next round gives every message up.
			continue
		}
	}
}

// gaveUp fails p's particles: they are replayed from their source.
func (o *outlet) gaveUp(p *pending, err error) {
	<-o.t.inflight
	o.t.cfg.Logger.Error("publish failed: its particles fail", "subject", o.subject, "number", p.number, "err", err)
	err = fmt.Errorf("jetstreamedge: publish to %s: %w", o.subject, err)
	p.done(err)
	o.settled(p.number, err)
}
