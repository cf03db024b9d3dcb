package jetstreamedge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/topology"
)

// StreamName returns the name of the stream of pipeline.
func StreamName(pipeline string) string { return "SENSORSTORM_" + Token(pipeline) }

// SubjectPrefix returns the prefix of the subjects of pipeline.
func SubjectPrefix(pipeline string) string { return "sensorstorm." + Token(pipeline) + "." }

// ConsumerName returns the durable consumer of instance index of bolt.
func ConsumerName(bolt string, index int) string { return fmt.Sprintf("%s_%d", Token(bolt), index) }

// Token makes a name safe as a subject token and in stream and consumer
// names: letters, digits, '-' and '_' stay, anything else becomes '_'
// followed by its code in hex, so that different names stay different.
func Token(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "_%x", r)
		}
	}
	return b.String()
}

// Stats counts what a Transport did. Read its fields atomically.
type Stats struct {
	// Published counts messages confirmed by the server, PublishedBytes
	// their payload and PublishedParticles their particles;
	// PublishFailed the messages that were not.
	Published, PublishedBytes, PublishedParticles, PublishFailed atomic.Uint64
	// Received counts messages taken from consumers, Redelivered those
	// delivered more than once, Duplicates the particles dropped as
	// copies already received.
	Received, Redelivered, Duplicates atomic.Uint64
}

// Transport carries a pipeline's edges into bolt instances over one
// JetStream stream: a subject per bolt instance, a durable pull consumer
// per subject with a priority group of policy pinned_client, so that of
// all the workers pulling, the server delivers to one at a time.
type Transport struct {
	cfg      Config
	js       jetstream.JetStream
	stream   jetstream.Stream
	inflight chan struct{}
	dones    sync.Map // *nats.Msg -> func(error)
	encoders sync.Pool
	stats    Stats

	mu     sync.Mutex // guards inlets and reassigned
	inlets []*inlet
	// reassigned is closed, and replaced, when Config.Owns may answer
	// differently.
	reassigned chan struct{}
}

var _ topology.Transport = (*Transport)(nil)

// atLeast reports whether the server version v (such as "2.9.10") is at
// least major.minor; a version it cannot read passes.
func atLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > major || ma == major && mi >= minor
}

// New makes the pipeline's stream on nc's JetStream, or updates it to
// cfg, and returns the Transport.
func New(ctx context.Context, nc *nats.Conn, cfg Config) (*Transport, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if v := nc.ConnectedServerVersion(); v != "" && !atLeast(v, 2, 11) {
		return nil, fmt.Errorf("%w: the server at %s is %s", ErrServerTooOld, nc.ConnectedUrlRedacted(), v)
	}
	t := &Transport{cfg: cfg, inflight: make(chan struct{}, cfg.MaxInFlight), reassigned: make(chan struct{})}
	t.encoders.New = func() any { return new(encoder) }
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			t.confirmed(m, nil)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			t.confirmed(m, err)
		}),
		// The transport bounds what is in flight itself, below this.
		jetstream.WithPublishAsyncMaxPending(2*cfg.MaxInFlight),
		jetstream.WithPublishAsyncTimeout(cfg.PublishTimeout),
	)
	if err != nil {
		return nil, fmt.Errorf("jetstreamedge: %w", err)
	}
	t.js = js
	t.stream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        StreamName(cfg.Pipeline),
		Description: "sensorstorm pipeline " + cfg.Pipeline,
		Subjects:    []string{SubjectPrefix(cfg.Pipeline) + ">"},
		// A message is gone once its downstream instance acknowledged it.
		Retention: jetstream.WorkQueuePolicy,
		Storage:   jetstream.FileStorage,
		Replicas:  cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("jetstreamedge: stream %s: %w", StreamName(cfg.Pipeline), err)
	}
	return t, nil
}

// Stats returns the transport's counters.
func (t *Transport) Stats() *Stats { return &t.stats }

// Edge implements topology.Transport: every bolt instance is fed through
// its subject.
func (t *Transport) Edge(bolt string, index int) (topology.Outlet, topology.Inlet, bool) {
	subject := SubjectPrefix(t.cfg.Pipeline) + Token(bolt) + "." + fmt.Sprint(index)
	in := &inlet{t: t, subject: subject, consumer: ConsumerName(bolt, index)}
	t.mu.Lock()
	t.inlets = append(t.inlets, in)
	t.mu.Unlock()
	return &outlet{t: t, subject: subject}, in, true
}

// ActiveUnits returns the consumers this transport received messages from
// at or after since: the bolt instances this worker runs.
func (t *Transport) ActiveUnits(since time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var units []string
	for _, in := range t.inlets {
		if last := in.lastReceived.Load(); last != 0 && last >= since.UnixNano() {
			units = append(units, in.consumer)
		}
	}
	return units
}

// pending is a message published and not yet confirmed.
type pending struct {
	done      func(error)
	particles int
}

// confirmed reports the fate of a published message.
func (t *Transport) confirmed(m *nats.Msg, err error) {
	v, ok := t.dones.LoadAndDelete(m)
	if !ok {
		return
	}
	<-t.inflight
	p := v.(pending)
	if err != nil {
		t.stats.PublishFailed.Add(1)
		t.cfg.Logger.Warn("publish failed: its particles are replayed", "subject", m.Subject, "err", err)
		p.done(fmt.Errorf("jetstreamedge: publish to %s: %w", m.Subject, err))
		return
	}
	t.stats.Published.Add(1)
	t.stats.PublishedBytes.Add(uint64(len(m.Data)))
	t.stats.PublishedParticles.Add(uint64(p.particles))
	p.done(nil)
}

// outlet publishes the batches for one bolt instance.
type outlet struct {
	t       *Transport
	subject string
}

// Send implements topology.Outlet. Batches go out asynchronously, in
// order on the connection; one that carries Drained or EOS is published
// synchronously, with retries, after those before it.
func (o *outlet) Send(ctx context.Context, b *topology.RemoteBatch, done func(error)) error {
	t := o.t
	e := t.encoders.Get().(*encoder)
	data, err := e.appendBatch(nil, b)
	t.encoders.Put(e)
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: o.subject, Data: data}
	if b.Drained || b.EOS {
		if _, err := t.js.PublishMsg(ctx, msg, jetstream.WithRetryAttempts(10)); err != nil {
			return fmt.Errorf("jetstreamedge: publish to %s: %w", o.subject, err)
		}
		t.stats.Published.Add(1)
		t.stats.PublishedBytes.Add(uint64(len(data)))
		t.stats.PublishedParticles.Add(uint64(len(b.Items)))
		done(nil)
		return nil
	}
	select {
	case t.inflight <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	t.dones.Store(msg, pending{done: done, particles: len(b.Items)})
	if _, err := t.js.PublishMsgAsync(msg); err != nil {
		if _, ok := t.dones.LoadAndDelete(msg); ok {
			<-t.inflight
			return fmt.Errorf("jetstreamedge: publish to %s: %w", o.subject, err)
		}
		// The error handler ran first and reported it.
	}
	return nil
}

// inlet feeds one bolt instance from its durable consumer.
type inlet struct {
	t        *Transport
	subject  string
	consumer string
	// lastReceived is the wall time of the last message, in ns.
	lastReceived atomic.Int64
	// pin is the pin id of the last message received; released, the pin
	// of the unit the last Run handed over: the next Run unpins the
	// consumer if it is still pinned with it (Run is called again only
	// once the instance gave back what it had not finished).
	pin, released string
	// ended tells that the instance ended its streams.
	ended atomic.Bool
}

// Run implements topology.Inlet: it pulls in the priority group until ctx
// ends, delivering what the server sends while this worker is pinned.
func (in *inlet) Run(ctx context.Context, feed topology.Feed) error {
	t := in.t
	cons, err := t.js.CreateOrUpdateConsumer(ctx, StreamName(t.cfg.Pipeline), jetstream.ConsumerConfig{
		Durable:        in.consumer,
		FilterSubject:  in.subject,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        t.cfg.AckWait,
		MaxAckPending:  t.cfg.MaxAckPending,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{PriorityGroup},
		PinnedTTL:      t.cfg.PinnedTTL,
	})
	if err != nil {
		return fmt.Errorf("jetstreamedge: consumer %s: %w", in.consumer, err)
	}
	defer in.finish(ctx, cons)
	if err := in.awaitOwnership(ctx, cons); err != nil {
		return err
	}
	expiry := max(t.cfg.PinnedTTL/2, time.Second)
	msgs, err := cons.Messages(jetstream.PullPriorityGroup(PriorityGroup), jetstream.PullMaxMessages(t.cfg.FetchBatch),
		jetstream.PullExpiry(expiry))
	if err != nil {
		return fmt.Errorf("jetstreamedge: consumer %s: %w", in.consumer, err)
	}
	// The previous worker's messages come again at the latest an ack wait
	// after its last pull expired.
	c := &catchUp{cons: cons, limit: t.cfg.AckWait + expiry}
	r := newReceiver(in, feed, c)
	var wg sync.WaitGroup
	inner, stopInner := context.WithCancel(ctx)
	defer func() {
		// Stopping the iterator ends the puller's wait for the next
		// message.
		stopInner()
		msgs.Stop()
		wg.Wait()
	}()
	wg.Go(func() { r.keepAlive(inner, t.cfg.AckWait/3) })
	// The iterator sends pull requests only while it is asked for the
	// next message: it is asked all the time, so that this worker stays
	// pinned while the instance is busy or its inbox full. What it
	// hands over waits in q, which MaxAckPending bounds.
	q := &msgQueue{ready: make(chan struct{}, 1)}
	var pullErr error
	pulled := make(chan struct{})
	wg.Go(func() {
		defer stopInner()
		defer close(pulled)
		pullErr = in.pull(inner, msgs, q, &c.taken)
	})
	reassigned := t.reassignment()
	for {
		var poll <-chan time.Time
		if c.holding {
			poll = time.After(catchUpPoll)
		}
		select {
		case <-inner.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return pullErr
		case <-reassigned:
			if !t.owns(in.consumer, true) {
				return in.release(msgs, pulled, q, c)
			}
			reassigned = t.reassignment()
			continue
		case <-q.ready:
		case <-poll:
		}
		msgs := q.take()
		for _, m := range msgs {
			// Kept alive while held back too.
			r.keep(m)
		}
		if err := r.receiveAll(inner, c.admit(time.Now(), msgs, t.cfg.PinnedTTL)); err != nil {
			return err
		}
		held, err := c.release(inner, time.Now())
		if err != nil {
			t.cfg.Logger.Debug("catching up", "consumer", in.consumer, "err", err)
		}
		if err := r.receiveAll(inner, held); err != nil {
			return err
		}
	}
}

// pull hands the consumer's messages to q until ctx ends or the iterator
// closes.
func (in *inlet) pull(ctx context.Context, msgs jetstream.MessagesContext, q *msgQueue, taken *atomic.Uint64) error {
	for {
		m, err := msgs.Next()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, jetstream.ErrMsgIteratorClosed):
			return fmt.Errorf("jetstreamedge: consumer %s: %w", in.consumer, err)
		case err != nil:
			// Heartbeats missed, a pin lost: the iterator pulls again.
			in.t.cfg.Logger.Debug("pull", "consumer", in.consumer, "err", err)
			continue
		}
		in.lastReceived.Store(time.Now().UnixNano())
		if pin := m.Headers().Get(pinHeader); pin != "" {
			in.pin = pin
		}
		taken.Add(1)
		q.put(m)
	}
}

// msgQueue holds the messages pulled and not yet delivered.
type msgQueue struct {
	mu    sync.Mutex
	msgs  []jetstream.Msg
	ready chan struct{} // signalled after a put
}

func (q *msgQueue) put(m jetstream.Msg) {
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *msgQueue) take() []jetstream.Msg {
	q.mu.Lock()
	defer q.mu.Unlock()
	msgs := q.msgs
	q.msgs = nil
	return msgs
}
