package jetstreamedge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sensorstorm/sensorstorm/internal/jsretry"
	"github.com/sensorstorm/sensorstorm/topology/edge"
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
	// delivered more than once, Duplicates the messages dropped because
	// the checkpoint a unit restored holds them, and the particles
	// dropped as copies: received already, or released by the restored
	// state.
	Received, Redelivered, Duplicates atomic.Uint64
	// HeldBack counts messages that came ahead of an earlier one of their
	// sender and waited for it; GapsSkipped the times a receiver stopped
	// waiting for missing messages.
	HeldBack, GapsSkipped atomic.Uint64
	// SpareEnds counts the ends of stream a unit's copy gave back for
	// another copy, having taken one from the same input already.
	SpareEnds atomic.Uint64
}

// Transport carries a pipeline's edges into bolt instances over one
// JetStream stream: a subject per bolt instance, a durable pull consumer
// per subject with a priority group of policy pinned_client, so that of
// all the workers pulling, the server delivers to one at a time.
//
// # Units and pins
//
// The grouping picks a bolt instance, so it picks the subject. When the
// worker pinned stops pulling for Config.PinnedTTL, the server pins
// another: pinned consumers decide which worker runs a downstream
// instance. With Config.Owns, a worker pulls only for the units it owns,
// and hands over those it no longer owns (Reassign). That also keeps a
// unit where it is when its consumer's leader changes (a NATS node
// stopped): the pin lives in the leader's memory, and a new leader pins
// whichever worker pulls first. An inlet pulls with one fetch request at a
// time, of Config.FetchBatch messages, whose replies queue without a bound
// but MaxAckPending's: the client never drops a message the server sent
// it (as nats.go's pull iterator, whose channel holds one pull's worth,
// does under load), and an inlet that hands its unit over stops once its
// last fetch ended, so that nothing the server sent goes unreceived.
//
// # Encoding
//
// One message carries one batch. A tag set and the field names of a
// particle cost their bytes once per message, a float with a few decimals
// two or three bytes (about 25 bytes a particle for the test recording
// against 137 in line protocol; BenchmarkCodec measures it); the sender's
// progress (high-water mark, forwarded watermark), drained and
// end-of-stream marks and meta particles travel in the same messages, in
// order.
//
// # Order
//
// Order is kept per sender, an outlet of one worker. A publish the server
// does not confirm (no stream leader while one is elected, a connection
// lost, a timeout) is tried again in place, with backoff, for
// Config.RetryFor; the batches after it wait. Batches published before
// the failure was known can be stored before the one tried again, and a
// delivery lost with a consumer's leader comes again only once its ack
// wait expired, after newer ones. So every message carries its sender (a
// random number per outlet) and its number among the sender's, and a
// receiving inlet hands each sender's messages on in number order,
// holding one that comes ahead of a missing one until that comes, or for
// at most two ack waits and a publish timeout. Stream sequences cannot do
// this: a retried publish is stored after the batches that overtook it.
//
// A gap nothing fills stops the unit. Every message also carries its
// sender's settled mark: the server had confirmed every message of the
// sender numbered below it (a message given up holds the mark back for
// good). When the wait ends and a message of the sender says a missing
// one was stored, it is gone from the stream (deleted, or lost with a
// node's storage) after its sender's inputs were acknowledged: the unit
// starts again from its newest checkpoint (its last holder may have taken
// the message into one since this holder restored), and if the message is
// missing again, the inlet's Run returns a *MissingError that names the
// sender and the numbers, and the run stops. Otherwise the sender died
// before the server stored it (or a NATS outage outlasted the wait): the
// unit that sent it derives its content again from its own checkpoint,
// under another sender, and the gap is skipped (Stats.GapsSkipped).
//
// A unit's checkpoint records, per sender, the number it expects next:
// every message numbered below was handed on before the cut, and a
// message the last holder acknowledged is among them. A unit that
// restores it waits for a missing message from there. A sender the
// checkpoint does not know starts its count past the highest number of
// the first messages the unit receives from it (after a catch-up, below,
// all those the server had pending).
//
// # Chains
//
// A bolt chained to the unit's instance by forward edges (topology.Forward)
// runs in the same process, behind it, and starts afresh with it; none of
// what follows needs to know. A particle's tree then ends in the chain,
// so a message is finished once the chain is done with it; the end of
// stream of a unit is acknowledged, and the unit marked ended, once the
// chain ended.
//
// # Checkpoints
//
// A unit's state moves by checkpoint, never by redelivery: the Transport
// needs topology.Config.Checkpoints with a partitioned store (package
// cluster gives one), and an inlet refuses to Run without (ErrNoCheckpoints).
// An inlet is an edge.Resumer: the unit records the inlet's position in
// every checkpoint (the messages a restore must not take again), a message
// is acknowledged once the unit finished it and a checkpoint after it
// committed, and a unit that moves restores its last checkpoint and drops,
// acknowledging them, the messages it holds (see position.go). The
// checkpoint commits only once what the unit published before its cut is
// confirmed (edge.Flusher), so what a restore does not take again has
// its effect in the stream or in the state.
//
// # Acknowledgements and copies
//
// A worker acknowledges a message only once every particle in it
// completed its local tree (a particle's local tree completes once
// JetStream confirmed, PubAck, the message that carries it) and a
// committed checkpoint is after it; until then it sends in-progress
// acknowledgements. Meta particles are part of their message's tree like
// data ones. A receiving instance drops copies of data particles it
// received already, by identity (origin, sequence), within
// Config.DedupWindow, and those before the position its restored state
// released up to (edge.Feed.Released). A unit that restored derives again
// what came after its checkpoint, under the identities it had (package
// topology): its receivers drop those copies.
//
// # Catching up
//
// When a consumer is pinned to a worker after another (a worker died), the
// messages the other took and did not acknowledge come again once their
// ack wait expires, while newer ones would flow at once and make the older
// particles late. The worker taking the unit over holds the newer messages
// back until the server has no message pending that it did not receive (at
// most an ack wait and a pull's expiry), so that the unit takes what came
// after its checkpoint in order. It does so too when the server's delivery
// numbers show that deliveries went elsewhere or were lost on the way; a
// silence alone (a NATS node stopped) changes nothing, and each sender's
// count goes on.
//
// # Limits
//
// A late particle that comes to a unit that restored, before the position
// its restored state released up to, is counted as a copy, not handed to
// the late policy. A worker that lost its pin while alive, other than by
// handing the unit over, keeps its messages in progress: the worker pinned
// next waits for them only until its catch-up bound, and does not get
// them; pinned again later, it waits for the messages the other
// acknowledged as for a gap, and after that wait starts again from the
// newest checkpoint, which the other committed before it acknowledged
// them. A publish stored only after its receiver started the sender's count
// (tried again while the unit moved, or while the receiver started) is
// handed on when it comes, late.
type Transport struct {
	cfg    Config
	js     jetstream.JetStream
	stream jetstream.Stream
	fence  fence
	// restarting counts the inlets whose Run the fence stopped and that
	// were not called again yet: their instances have not started afresh.
	restarting atomic.Int64
	inflight   chan struct{}
	dones      sync.Map // *nats.Msg -> func(error)
	encoders   sync.Pool
	stats      Stats

	mu     sync.Mutex // guards inlets and reassigned
	inlets []*inlet
	// reassigned is closed, and replaced, when Config.Owns may answer
	// differently.
	reassigned chan struct{}
}

var _ edge.Transport = (*Transport)(nil)

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
// cfg, trying again while the server does not answer until ctx ends, and
// returns the Transport.
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
			// When a publish times out, nats.go calls this holding the
			// lock its PublishMsgAsync takes, which Send calls holding
			// the outlet's: confirmed, which takes the outlet's lock to
			// try again, must not wait for it there.
			go t.confirmed(m, err)
		}),
		// The transport bounds what is in flight itself, below this.
		jetstream.WithPublishAsyncMaxPending(2*cfg.MaxInFlight),
		jetstream.WithPublishAsyncTimeout(cfg.PublishTimeout),
	)
	if err != nil {
		return nil, fmt.Errorf("jetstreamedge: %w", err)
	}
	t.js = js
	sc := jetstream.StreamConfig{
		Name:        StreamName(cfg.Pipeline),
		Description: "sensorstorm pipeline " + cfg.Pipeline,
		Subjects:    []string{SubjectPrefix(cfg.Pipeline) + ">"},
		// A message is gone once its downstream instance acknowledged it.
		Retention: jetstream.WorkQueuePolicy,
		Storage:   jetstream.FileStorage,
		Replicas:  cfg.Replicas,
	}
	err = jsretry.Do(ctx, cfg.Logger, "making the stream "+sc.Name, func() (err error) {
		t.stream, err = js.CreateOrUpdateStream(ctx, sc)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jetstreamedge: stream %s: %w", sc.Name, err)
	}
	return t, nil
}

// Stats returns the transport's counters.
func (t *Transport) Stats() *Stats { return &t.stats }

// Edge implements edge.Transport: every bolt instance the topology asks
// for is fed through its subject, a unit of its own.
func (t *Transport) Edge(bolt string, index int) (edge.Outlet, edge.Inlet, bool) {
	subject := SubjectPrefix(t.cfg.Pipeline) + Token(bolt) + "." + fmt.Sprint(index)
	in := &inlet{t: t, subject: subject, consumer: ConsumerName(bolt, index)}
	t.mu.Lock()
	t.inlets = append(t.inlets, in)
	t.mu.Unlock()
	return newOutlet(t, subject), in, true
}

// ActiveUnits returns, sorted, the consumers this transport received messages from
// at or after since: the bolt instances this worker runs.
func (t *Transport) ActiveUnits(since time.Time) []string {
	return t.unitsWhere(func(in *inlet) bool {
		last := in.lastReceived.Load()
		return last != 0 && last >= since.UnixNano()
	})
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
	// fenced tells that the fence stopped the last Run: counted in
	// Transport.restarting until Run is called again.
	fenced atomic.Bool
	// holding tells that this worker pulls for the unit, or handed it
	// over and has not unpinned the consumer yet.
	holding atomic.Bool
	// resume is its side of its unit's checkpoints, if it takes any.
	resume resumeState
}

// Run implements edge.Inlet: it pulls in the priority group until ctx
// ends, delivering what the server sends while this worker is pinned.
func (in *inlet) Run(ctx context.Context, feed edge.Feed) error {
	t := in.t
	if !in.checkpointed() {
		return fmt.Errorf("%w: unit %s", ErrNoCheckpoints, in.consumer)
	}
	if in.fenced.Swap(false) {
		// The instance started afresh.
		t.restarting.Add(-1)
	}
	cons, err := in.consumerOf(ctx)
	if err != nil {
		return err
	}
	defer in.finish(ctx, cons)
	defer func() {
		// A unit handed over stays held until the next Run unpinned it.
		if in.released == "" {
			in.holding.Store(false)
		}
	}()
	var raised <-chan struct{}
	for {
		if err := in.awaitOwnership(ctx, cons); err != nil {
			return err
		}
		// A fence that rises from here on, even if it lifts again before
		// the loop below looks, hands the unit over: its instance may
		// hold what another worker took meanwhile.
		var fenced bool
		if fenced, raised = t.fence.state(); !fenced {
			break
		}
	}
	in.holding.Store(true)
	expiry := max(t.cfg.PinnedTTL/2, time.Second)
	// The previous worker's messages come again at the latest an ack wait
	// after its last pull expired.
	c := &catchUp{cons: cons, limit: t.cfg.AckWait + expiry}
	// A message missing comes an ack wait after its delivery was lost, or
	// once its sender tried it again, which takes a publish timeout and a
	// leader's election: two ack waits and a publish timeout cover both
	// but for long outages. Longer, a hole left by messages a previous
	// owner acknowledged out of order would stall the unit as long.
	s := newSequencer(in.consumer, 2*t.cfg.AckWait+t.cfg.PublishTimeout, t.cfg.Logger.With("consumer", in.consumer), &t.stats)
	r := newReceiver(in, feed, c)
	s.seed(time.Now(), r.handed)
	in.resume.run(r)
	defer in.resume.run(nil)
	var wg sync.WaitGroup
	inner, stopInner := context.WithCancel(ctx)
	defer func() {
		stopInner()
		wg.Wait()
	}()
	wg.Go(func() { r.keepAlive(inner, t.cfg.AckWait/3) })
	wg.Go(func() { r.settleAll(inner) })
	// The puller pulls all the time, so that this worker stays pinned
	// while the instance is busy; what it receives waits in q, which
	// MaxAckPending bounds.
	q := &msgQueue{ready: make(chan struct{}, 1)}
	p := &puller{in: in, cons: cons, expiry: expiry, q: q, taken: &c.taken, stop: make(chan struct{}), done: make(chan struct{})}
	wg.Go(func() {
		defer stopInner()
		p.run(inner)
	})
	// The fence stops everything at once, also a delivery blocked until
	// trees finish, which a partition keeps from finishing.
	var fencedOff atomic.Bool
	wg.Go(func() {
		select {
		case <-raised:
			if !in.fenced.Swap(true) {
				t.restarting.Add(1)
			}
			fencedOff.Store(true)
			stopInner()
		case <-inner.Done():
		}
	})
	stopped := func(err error) error {
		if fencedOff.Load() && ctx.Err() == nil {
			return in.release(p, q, c, s)
		}
		return err
	}
	reassigned := t.reassignment()
	receive := func(msgs []jetstream.Msg) error {
		err := r.receiveAll(inner, msgs)
		if errors.Is(err, edge.ErrReleased) && !fencedOff.Load() {
			// The unit starts again here (a checkpoint newer than the one
			// it restored): what was not delivered goes back at once.
			return in.release(p, q, c, s)
		}
		return stopped(err)
	}
	for {
		var poll <-chan time.Time
		if deadline, ok := s.deadline(); ok || c.holding {
			wait := catchUpPoll
			if ok {
				wait = min(wait, time.Until(deadline))
			}
			poll = time.After(wait)
		}
		select {
		case <-inner.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return stopped(p.err)
		case <-reassigned:
			if !t.owns(in.consumer, true) {
				return in.release(p, q, c, s)
			}
			reassigned = t.reassignment()
			continue
		case <-q.ready:
		case <-poll:
		}
		// Kept alive while held back too; a message delivered again while
		// in progress here is the one taken already (receiver.keep).
		msgs := slices.DeleteFunc(q.take(), func(m jetstream.Msg) bool { return !r.keep(m) })
		now := time.Now()
		admitted, began := c.admit(now, msgs)
		if began {
			// The senders' counts go on: a number that went to another
			// worker meanwhile is a gap the sequencer waits for, and
			// skips; a publish tried again while the unit was silent
			// comes in its place.
			t.cfg.Logger.Debug("catching up", "consumer", in.consumer)
		}
		if err := receive(s.order(now, admitted)); err != nil {
			return err
		}
		held, err := c.release(inner, time.Now())
		if err != nil {
			t.cfg.Logger.Debug("catching up", "consumer", in.consumer, "err", err)
		}
		now = time.Now()
		if err := receive(s.order(now, held)); err != nil {
			return err
		}
		expired, err := s.expire(now)
		if me, ok := errors.AsType[*MissingError](err); ok {
			if in.foundMissing(me) {
				t.cfg.Logger.Error("messages missing: the unit stops", "consumer", in.consumer, "err", me)
				return me
			}
			// Its last holder may have taken them since, in a checkpoint
			// this one's restore did not see: the unit starts again from
			// its newest.
			t.cfg.Logger.Warn("messages missing: starting again from the newest checkpoint", "consumer", in.consumer, "err", me)
			return in.release(p, q, c, s)
		}
		if err := receive(expired); err != nil {
			return err
		}
	}
}

// consumerOf makes the inlet's consumer, or updates it, trying again
// while the server does not answer (a leader being elected) until ctx
// ends.
func (in *inlet) consumerOf(ctx context.Context) (jetstream.Consumer, error) {
	t := in.t
	cfg := jetstream.ConsumerConfig{
		Durable:        in.consumer,
		FilterSubject:  in.subject,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        t.cfg.AckWait,
		MaxAckPending:  t.cfg.MaxAckPending,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{PriorityGroup},
		PinnedTTL:      t.cfg.PinnedTTL,
	}
	var cons jetstream.Consumer
	err := jsretry.Do(ctx, t.cfg.Logger, "making the consumer "+in.consumer, func() (err error) {
		cons, err = t.js.CreateOrUpdateConsumer(ctx, StreamName(t.cfg.Pipeline), cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jetstreamedge: consumer %s: %w", in.consumer, err)
	}
	return cons, nil
}

// puller pulls a consumer's messages into a queue, one pull request at a
// time. Not the client's Messages iterator or Consume: the iterator's
// channel holds only as many messages as one pull asks for, and status
// messages and the overlap of pull requests (a new one sent at half the
// batch, or after missed heartbeats while the old one still runs) make
// it overflow while its reader is slow, and the client drops what does
// not fit; both end a subscription with pull requests outstanding on the
// server, whose messages then go nowhere. Either way messages come again
// only an ack wait later, behind newer ones. A fetch ends when the
// server answered its request in full (batch filled, expired, pin
// refused), or a second after its expiry if the server did not (a node
// gone), and its replies queue without a bound.
type puller struct {
	in     *inlet
	cons   jetstream.Consumer
	expiry time.Duration
	q      *msgQueue
	taken  *atomic.Uint64
	// stop asks run to end after the fetch under way; done is closed
	// when run returned, with err set.
	stop, done chan struct{}
	err        error
}

// run pulls until ctx ends, stop is closed or the connection closed.
func (p *puller) run(ctx context.Context) {
	defer close(p.done)
	in := p.in
	b := jsretry.Backoff{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.stop:
			return
		default:
		}
		batch, err := p.cons.Fetch(in.t.cfg.FetchBatch, jetstream.FetchPriorityGroup(PriorityGroup), jetstream.FetchMaxWait(p.expiry))
		if err == nil {
			for m := range batch.Messages() {
				in.lastReceived.Store(time.Now().UnixNano())
				if pin := m.Headers().Get(pinHeader); pin != "" {
					in.pin = pin
				}
				p.taken.Add(1)
				p.q.put(m)
			}
			err = batch.Error()
		}
		switch {
		case err == nil:
			b.Reset()
			continue
		case errors.Is(err, nats.ErrConnectionClosed):
			p.err = fmt.Errorf("jetstreamedge: consumer %s: %w", in.consumer, err)
			return
		}
		// A pin refused, heartbeats missed, a leader being elected:
		// pull again.
		in.t.cfg.Logger.Debug("pull", "consumer", in.consumer, "err", err)
		if errors.Is(err, jetstream.ErrPinIDMismatch) {
			continue
		}
		if b.Wait(ctx) != nil {
			return
		}
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
