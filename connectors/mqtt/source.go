package mqtt

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/topology"
	"github.com/sensorstorm/sensorstorm/topology/inflight"
)

// Stats counts what a Source did. The counters are safe to read while it
// runs. Emitted, and for messages read back from the spool Recovered,
// Buffered and QueuedBytes, move once per batch of messages handed to the
// pipeline (up to 256), not one by one.
type Stats struct {
	// Received counts messages received from the broker; Redelivered
	// those the broker marked as sent before; Retained those it sent
	// with the retain flag, the retained message of a topic sent because
	// a subscription was made: at the first connection, and at those
	// where the broker had lost the session or the filters changed (see
	// subscribe and docs/ingest.md);
	// Dropped QoS 0 messages dropped because MaxBuffered messages were
	// waiting; Unwanted those on a topic no configured filter matches,
	// left from an earlier run's subscriptions, acknowledged and dropped.
	Received, Redelivered, Retained, Dropped, Unwanted atomic.Uint64
	// Copies counts, in ModeSpool, redelivered messages identical to one
	// of the last the previous run made durable: a process killed between
	// a message's fsync and its acknowledgement gets it again from the
	// broker. They are acknowledged and dropped.
	Copies atomic.Uint64
	// Spooled counts messages made durable in the spool; Recovered the
	// spooled messages a previous run left not completed, read back and
	// emitted first, which may duplicate what that run had processed.
	Spooled, Recovered atomic.Uint64
	// Acked counts acknowledgements sent to the broker (PUBACK or
	// PUBREC). One sent while the connection is lost is dropped, and the
	// broker sends the message again.
	Acked atomic.Uint64
	// Emitted counts particles emitted; Invalid bad input rejected to
	// the dead-letter sink: bad lines or objects, and messages larger
	// than MaxPayload or on a topic that does not match TopicTags; Failed
	// particles the engine gave up on; Completed messages all of whose
	// particles were done.
	Emitted, Invalid, Failed, Completed atomic.Uint64
	// Connects counts connections, the first included, once their
	// subscriptions were made; ConnectionsLost the connections lost.
	Connects, ConnectionsLost atomic.Uint64
	// Buffered is the number of messages received and held in memory,
	// not yet emitted; PeakBuffered its highest value. QueuedBytes counts
	// the payload bytes of those taken for the pipeline, which
	// MaxBufferedBytes bounds; PeakQueuedBytes its highest value. The
	// others wait unacknowledged, as many as the broker sends beyond its
	// in-flight window, or, in ModeSpool, on disk (BacklogStats).
	Buffered, PeakBuffered, QueuedBytes, PeakQueuedBytes atomic.Int64
}

// Source is a topology.Source that subscribes to MQTT topics and emits the
// particles decoded from their messages. It is also a
// topology.Acknowledger: run it with acking on to get its guarantees.
//
// Run connects and emits until ctx ends. The connection outlives Run, so
// that trees completing while the topology drains are acknowledged: the
// topology owns it, and closes the source once it drained (see
// topology.Source). Outside a topology, call Close: it disconnects and
// closes the spool.
//
// The source subscribes (QoS 1 by default; 0 and 2 too) with a persistent
// session. It subscribes again at a connection only where the broker did
// not keep the session or the filters changed, since subscribing again
// makes the broker resend every retained message. Its one message handler
// is registered before it connects, so that the messages a persistent
// session queued arrive at once, and it only queues a message and
// returns, so that paho's keepalive never waits for the pipeline. MQTT
// 3.1.1 cannot list a session's subscriptions: the source records its
// filters in Config.StateDir and unsubscribes from those a later run with
// the same client id no longer has; a message that no configured filter
// matches is acknowledged and dropped all the same (Stats.Unwanted).
//
// Bad input is rejected to the dead-letter sink with a
// *particle.DecodeError naming the topic, line and column, and its own
// text: the bad line, the bad element of a JSON array, or the payload when
// it does not parse at all; the rest of the payload goes on, and the
// message is acknowledged like any other.
//
// Memory is bounded: at most Config.MaxBuffered messages (and
// Config.MaxBufferedBytes of payload) wait in memory between the broker
// and the pipeline; add what the broker sends unacknowledged
// (max_inflight_messages; Mosquitto 2.0.11 was seen to exceed it, up to a
// few hundred, after bursts of acknowledgements) times the largest
// message it lets through (message_size_limit). In ModeSpool the spool is
// the rest of the buffer: a message is acknowledged once durable however
// far behind the pipeline is, and what does not fit in memory waits on
// disk, read back in order (a spool.Backlog), so a slow pipeline grows the
// spool, not the broker's queue. BacklogStats reports it; it is logged
// when it spills to disk and at each doubling; at Config.Backlog's quota
// the source stops acknowledging and logs it at error level. What waits
// at exit is processed first at the next start. In the other modes,
// beyond MaxBuffered the source stops acknowledging and the broker stops
// sending (QoS 0 messages are dropped and counted instead).
//
// After a crash, what the broker sends again may be older than what the
// spool's backlog already released downstream: a synchronization buffer
// with a late policy of drop would drop it. Use syncbuffer.LatePass (the
// ingest command's default) where that matters.
type Source struct {
	cfg   Config
	dec   *decoder
	stats Stats
	ran   atomic.Bool

	conn  *conn
	spool *spool.Spool
	// backlog hands the pipeline, in ModeSpool, what the spool holds for
	// it, from memory or read back from disk; records before firstSeq
	// were left by an earlier run.
	backlog  *spool.Backlog[*message]
	firstSeq uint64
	slab     slab       // readBack's
	read     readCounts // readBack's
	// opened and backlogged are spool and backlog for other goroutines
	// (SpoolStats, BacklogStats): Run sets them while they may already
	// be asking.
	opened     atomic.Pointer[spool.Spool]
	backlogged atomic.Pointer[spool.Backlog[*message]]

	mu       sync.Mutex // guards arrivals and order
	arrivals []*message
	order    []*message    // ModeTree: messages not yet acknowledged, in arrival order
	kick     chan struct{} // a message arrived; size one: one wake-up is enough

	// ModeTree: the engine's goroutines report completed messages by
	// kicking ackKick; the source's own acks goroutine sends the PUBACKs,
	// so that no engine or bolt goroutine waits on paho.
	ackKick chan struct{} // size one: one wake-up is enough
	ackStop chan struct{}
	ackDone chan struct{}
	ready   []*message // release's scratch, reused to spare an allocation per release; used by acks only

	// queue holds the messages between the broker and the pipeline
	// outside ModeSpool; its size is MaxBuffered, the source's memory
	// bound. taken counts the messages taken from arrivals and not yet
	// emitted, Stats.QueuedBytes their payload bytes: outside ModeSpool,
	// take keeps them within MaxBuffered and MaxBufferedBytes, so that
	// sending to queue never blocks for long and acknowledgements stop
	// when the pipeline falls behind. In ModeSpool the backlog holds
	// them, on disk past those bounds.
	queue chan *message
	taken atomic.Int64
	room  chan struct{} // a message was emitted; size one: one wake-up is enough
	ok    []*message    // emit's scratch: the messages of a batch worth decoding
	// emitted and acked are the scratch space of emit and AckBatch for
	// the messages they complete.
	emitted, acked completing

	broker atomic.Pointer[string] // see Broker

	inflight inflight.Table[*message] // the messages being decoded or with particles in the pipeline
	numbers  []uint32                 // emit's scratch: the numbers inflight gave a batch

	positions spool.Positions // with Config.Checkpoints
	copies    copies          // in ModeSpool

	closeOnce sync.Once
	closeErr  error
}

// message is one MQTT message in flight.
type message struct {
	m       paho.Message // nil when replayed from the spool or once acknowledged
	topic   string
	payload []byte // the first oversizePrefix bytes when skip is skipTooLarge
	size    int    // of the payload received
	recv    int64
	seq     uint64 // in the spool, or 0
	skip    skip
	// remaining counts the particles not finished, plus one while the
	// message is being emitted.
	remaining atomic.Int32
	done      bool // ModeTree: may be acknowledged; guarded by Source.mu
	// number is the message's in Source.inflight, 0 for one not decoded;
	// emitted counts its particles emitted. Both are written by the
	// goroutine that emits.
	number  uint32
	emitted uint32
}

// skip says why a message is acknowledged without being decoded. Such a
// message goes the way of the others, so that acknowledgements keep
// arrival order, but it is not spooled and holds little memory.
type skip uint8

const (
	skipNone     skip = iota
	skipTooLarge      // its payload exceeds MaxPayload: bad input
	skipUnwanted      // no configured filter matches its topic
	skipCopy          // a copy of a message the previous run made durable (see copies)
)

// oversizePrefix is how much of a payload larger than MaxPayload is kept,
// for the dead letter to show what it was.
const oversizePrefix = 256

var (
	_ topology.Source            = (*Source)(nil)
	_ topology.BatchAcknowledger = (*Source)(nil)
)

// NewSource returns a Source for cfg, after applying defaults and
// validating it. It neither connects nor opens the spool: Run does.
func NewSource(cfg Config) (*Source, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dec, err := newDecoder(cfg.Payload)
	if err != nil {
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	return &Source{
		cfg:     cfg,
		dec:     dec,
		kick:    make(chan struct{}, 1),
		ackKick: make(chan struct{}, 1),
		room:    make(chan struct{}, 1),
		queue:   make(chan *message, cfg.MaxBuffered),
	}, nil
}

// Stats returns the source's counters.
func (s *Source) Stats() *Stats { return &s.stats }

// Broker returns the URL of the broker of the source's latest connection
// attempt, the one it is connected to while it is: a client holds one
// connection at a time. It is "" before the first attempt, and safe to
// call while the source runs.
func (s *Source) Broker() string {
	if u := s.broker.Load(); u != nil {
		return *u
	}
	return ""
}

// SpoolStats returns the figures of the source's spool, and false before
// Run opened it or in a mode without one. It is safe to call while the
// source runs.
func (s *Source) SpoolStats() (spool.Stats, bool) {
	sp := s.opened.Load()
	if sp == nil {
		return spool.Stats{}, false
	}
	return sp.Stats(), true
}

// BacklogStats returns what waits in the spool for the pipeline, and
// false before Run opened it or in a mode without one. It is safe to call
// while the source runs.
func (s *Source) BacklogStats() (spool.BacklogStats, bool) {
	b := s.backlogged.Load()
	if b == nil {
		return spool.BacklogStats{}, false
	}
	return b.Stats(), true
}

// Run implements topology.Source. In ModeSpool it first opens the spool,
// whose records a previous run left not completed the pipeline gets
// first, then connects, retrying as ConnConfig says. It returns nil when
// ctx ends, a *ConnectError when the broker refused the connection for
// good, or the error that stopped it (a spool write or read error).
func (s *Source) Run(ctx context.Context, out topology.SourceEmitter) error {
	if !s.ran.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	if s.cfg.Mode == ModeSpool {
		sp, err := spool.Open(s.cfg.StateDir, s.cfg.Spool)
		if err != nil {
			return fmt.Errorf("mqtt: %w", err)
		}
		s.spool = sp
		s.opened.Store(sp)
		s.firstSeq = sp.Durable()
		if err := s.copies.load(sp, s.cfg.MaxBatch); err != nil {
			return fmt.Errorf("mqtt: %w", err)
		}
		if s.cfg.Checkpoints {
			if err := s.skipCovered(); err != nil {
				return err
			}
		}
		bcfg := s.cfg.Backlog
		bcfg.MemoryRecords, bcfg.MemoryBytes = s.cfg.MaxBuffered, int64(s.cfg.MaxBufferedBytes)
		bcfg.ReadBatch = min(spool.DefaultReadBatch, s.cfg.MaxBuffered)
		bcfg.Name, bcfg.Logger, bcfg.Now = "mqtt", s.cfg.Logger.With("client_id", s.cfg.ClientID), s.cfg.Wall.Now
		bl, err := spool.NewBacklog(sp, bcfg, s.readBack)
		if err != nil {
			return fmt.Errorf("mqtt: %w", err)
		}
		s.backlog = bl
		s.backlogged.Store(bl)
	}
	opts := paho.NewClientOptions()
	opts.SetCleanSession(s.cfg.CleanSession)
	// One handler in order for every message: overlapping filters do not
	// call it twice, and a message of a subscription the persistent
	// session still holds is acknowledged too. It is registered before
	// connecting: the session's queued messages arrive at once.
	opts.SetOrderMatters(true)
	opts.SetAutoAckDisabled(true)
	opts.SetDefaultPublishHandler(s.arrive)
	cn, err := newConn(&s.cfg.ConnConfig, connCounters{&s.stats.Connects, &s.stats.ConnectionsLost, &s.broker}, opts, s.subscribe)
	if err != nil {
		return err
	}
	s.conn = cn
	cn.start()
	if s.cfg.Mode == ModeTree {
		s.startAcks()
	}

	var wg sync.WaitGroup
	errc := make(chan error, 1)
	moverCtx, stop := context.WithCancel(ctx)
	defer stop()
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
		stop()
	}
	wg.Go(func() {
		if err := s.move(moverCtx); err != nil {
			fail(err)
		}
	})
	wg.Go(func() {
		select {
		case <-cn.failed():
			if cn.err != nil {
				fail(cn.err)
			}
		case <-moverCtx.Done():
		}
	})
	err = s.emitLoop(moverCtx, out)
	stop()
	wg.Wait()
	select {
	case err = <-errc:
	default:
	}
	return err
}

// subscribe runs on every connection: the broker keeps a persistent
// session's subscriptions, but not a clean one's, nor one it lost. When
// the broker kept the session (sessionPresent) with the subscriptions
// recorded in StateDir, it does not subscribe again: a subscription made
// again makes the broker send every matching retained message again,
// which the session took before. Otherwise it subscribes, then
// unsubscribes from the filters an earlier run subscribed to and this one
// does not, as recorded.
func (s *Source) subscribe(cl paho.Client, sessionPresent bool) {
	log := s.cfg.Logger.With("client_id", s.cfg.ClientID)
	qos := s.cfg.QoS.Byte()
	old, oldErr := readSubscriptions(s.cfg.StateDir, s.cfg.ClientID)
	if oldErr == nil && sessionPresent && !s.cfg.CleanSession && old.holds(s.cfg.Topics, qos) {
		log.Debug("mqtt: the broker kept the session and its subscriptions", "topics", s.cfg.Topics)
		return
	}
	filters := make(map[string]byte, len(s.cfg.Topics))
	for _, t := range s.cfg.Topics {
		filters[t] = qos
	}
	tok := cl.SubscribeMultiple(filters, nil)
	if !tok.WaitTimeout(s.cfg.ConnectTimeout) {
		log.Error("mqtt: subscribe not confirmed in time", "topics", s.cfg.Topics)
		return
	}
	if err := tok.Error(); err != nil {
		log.Error("mqtt: subscribe failed", "topics", s.cfg.Topics, "err", err)
		return
	}
	granted := true
	if st, ok := tok.(*paho.SubscribeToken); ok {
		for topic, code := range st.Result() {
			if code > 2 {
				log.Error("mqtt: subscription refused", "topic", topic, "code", code)
				granted = false
			}
		}
	}
	if oldErr != nil {
		log.Error("mqtt: reading the previous subscriptions", "err", oldErr)
		return
	}
	if gone := stale(old.Topics, s.cfg.Topics); len(gone) > 0 && !s.cfg.CleanSession {
		tok := cl.Unsubscribe(gone...)
		if !tok.WaitTimeout(s.cfg.ConnectTimeout) || tok.Error() != nil {
			// Kept on record, to be tried again on the next connection.
			log.Error("mqtt: unsubscribing from filters no longer configured", "topics", gone, "err", tok.Error())
			return
		}
		log.Info("mqtt: unsubscribed from filters no longer configured", "topics", gone)
	}
	rec := subscriptions{ClientID: s.cfg.ClientID, Topics: s.cfg.Topics}
	if granted {
		// A refused subscription is asked for again at the next
		// connection.
		rec.QoS = &qos
	}
	if err := writeSubscriptions(s.cfg.StateDir, rec); err != nil {
		log.Error("mqtt: recording the subscriptions", "err", err)
	}
}

// arrive is paho's message handler. It only queues the message: blocking
// paho would stall keepalive.
func (s *Source) arrive(_ paho.Client, m paho.Message) {
	s.stats.Received.Add(1)
	if m.Duplicate() {
		s.stats.Redelivered.Add(1)
	}
	if m.Retained() {
		s.stats.Retained.Add(1)
	}
	msg := &message{m: m, topic: m.Topic(), payload: m.Payload(), recv: s.cfg.Wall.Now().UnixNano()}
	msg.size = len(msg.payload)
	switch {
	case !s.wanted(msg.topic):
		msg.skip, msg.payload = skipUnwanted, nil
	case m.Duplicate() && s.copies.take(msg.topic, msg.payload):
		s.stats.Copies.Add(1)
		msg.skip, msg.payload = skipCopy, nil
	case msg.size > s.cfg.MaxPayload:
		// Only a prefix is kept: paho's copy goes once acknowledged.
		msg.skip, msg.payload = skipTooLarge, bytes.Clone(msg.payload[:min(oversizePrefix, msg.size)])
	}
	s.mu.Lock()
	if m.Qos() == 0 && len(s.arrivals) >= s.cfg.MaxBuffered {
		s.mu.Unlock()
		s.stats.Dropped.Add(1)
		return
	}
	s.arrivals = append(s.arrivals, msg)
	if s.cfg.Mode == ModeTree {
		s.order = append(s.order, msg)
	}
	s.mu.Unlock()
	peak(&s.stats.Buffered, &s.stats.PeakBuffered, 1)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// peak adds n to v and raises p to v's new value if it is higher.
func peak(v, p *atomic.Int64, n int64) {
	x := v.Add(n)
	for {
		old := p.Load()
		if x <= old || p.CompareAndSwap(old, x) {
			return
		}
	}
}

// wanted reports whether a configured filter matches topic. A persistent
// session may still hold subscriptions of an earlier run.
func (s *Source) wanted(topic string) bool {
	for _, f := range s.cfg.Topics {
		if matchFilter(f, topic) {
			return true
		}
	}
	return false
}

// take waits for arrivals and for room in the queue and returns up to
// MaxBatch arrivals, or nil when ctx ends. Room is MaxBuffered messages
// and MaxBufferedBytes payload bytes, but one message is always let
// through when none is taken; in ModeSpool the backlog's quota bounds
// what is taken instead (see spoolArrivals).
func (s *Source) take(ctx context.Context, batch []*message) []*message {
	for {
		free := s.cfg.MaxBuffered - int(s.taken.Load())
		taken, limit := s.stats.QueuedBytes.Load(), int64(s.cfg.MaxBufferedBytes)
		if s.backlog != nil {
			// The spool is the buffer: memory holds a bounded part of it.
			free, limit = s.cfg.MaxBatch, math.MaxInt64
		}
		s.mu.Lock()
		n, size := 0, int64(0)
		for n < min(len(s.arrivals), s.cfg.MaxBatch, max(free, 0)) {
			sz := int64(len(s.arrivals[n].payload))
			if taken+size+sz > limit && taken+size > 0 {
				break
			}
			size += sz
			n++
		}
		batch = append(batch[:0], s.arrivals[:n]...)
		rest := copy(s.arrivals, s.arrivals[n:])
		clear(s.arrivals[rest:])
		s.arrivals = s.arrivals[:rest]
		s.mu.Unlock()
		if n > 0 {
			if s.backlog == nil {
				s.taken.Add(int64(n))
				peak(&s.stats.QueuedBytes, &s.stats.PeakQueuedBytes, size)
			}
			return batch
		}
		wake := s.kick
		if rest > 0 {
			wake = s.room // arrivals wait for the pipeline
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// move hands arrivals to the pipeline: in ModeSpool after making them
// durable, in ModeSpool and ModeReceipt after acknowledging them.
// Acknowledgements leave in arrival order, as MQTT requires. When
// MaxBuffered messages wait for the pipeline (in ModeSpool: when the
// backlog is at its disk quota), take waits, and so do the
// acknowledgements: the broker stops sending.
func (s *Source) move(ctx context.Context) error {
	if s.spool != nil {
		return s.spoolArrivals(ctx)
	}
	var batch []*message
	for {
		if batch = s.take(ctx, batch); batch == nil {
			return nil
		}
		if !s.handOn(ctx, batch) {
			return nil
		}
	}
}

// spoolArrivals makes arrivals durable in the spool, acknowledges them as
// soon as each sync returns and adds them to the backlog, from which the
// pipeline takes them at its own pace: a sync starts as soon as the
// previous one ended and anything arrived, never waiting for the
// pipeline, so that a broker that holds few messages unacknowledged
// (Mosquitto: 20) waits on one fsync at a time. Only the backlog's disk
// quota stops it, and with it the acknowledgements.
func (s *Source) spoolArrivals(ctx context.Context) error {
	recheck, stop := s.cfg.Wall.NewTicker(time.Second)
	defer stop()
	var rec []byte
	var batch []*message
	for {
		for s.backlog.Full() {
			// The free space may come back without the pipeline moving.
			select {
			case <-s.backlog.Room():
			case <-recheck:
			case <-ctx.Done():
				return nil
			}
		}
		if batch = s.take(ctx, batch); batch == nil {
			// What is not acknowledged the broker sends again.
			return nil
		}
		for _, m := range batch {
			if m.skip != skipNone {
				// Acknowledged and handed on with the others, never
				// replayed: a crash may lose its dead letter, not data.
				continue
			}
			rec = spool.AppendRecord(rec[:0], spool.Record{Source: m.topic, Received: m.recv, Payload: m.payload})
			seq, err := s.spool.Append(rec)
			if err != nil {
				return fmt.Errorf("mqtt: %w", err)
			}
			m.seq = seq
		}
		if err := s.spool.Sync(); err != nil {
			return fmt.Errorf("mqtt: %w", err)
		}
		s.stats.Spooled.Add(uint64(len(batch)))
		s.ack(batch)
		for _, m := range batch {
			if s.backlog.Add(m.seq, m, int64(len(m.topic)+len(m.payload)), m.recv) {
				s.taken.Add(1)
				peak(&s.stats.QueuedBytes, &s.stats.PeakQueuedBytes, int64(len(m.payload)))
			} else {
				s.stats.Buffered.Add(-1) // held on disk only, until read back
			}
		}
		clear(batch)
	}
}

// readBack makes the message of a record the backlog read back from the
// spool.
func (s *Source) readBack(seq uint64, r spool.Record) (*message, error) {
	if seq < s.firstSeq {
		s.read.recovered++
	}
	s.read.n++
	s.read.bytes += int64(len(r.Payload))
	m := s.slab.message()
	m.topic, m.recv, m.payload, m.size, m.seq = r.Source, r.Received, s.slab.clone(r.Payload), len(r.Payload), seq
	return m, nil
}

// readCounts are the messages readBack made and not yet accounted in
// Stats, which countRead does once per batch: the counters share cache
// lines with those the engine's goroutines update.
type readCounts struct {
	n, bytes  int64
	recovered uint64
}

// countRead accounts the messages read back since it was last called as
// held in memory. Only the goroutine that reads back calls it.
func (s *Source) countRead() {
	r := &s.read
	if r.n == 0 {
		return
	}
	s.stats.Recovered.Add(r.recovered)
	peak(&s.stats.Buffered, &s.stats.PeakBuffered, r.n)
	peak(&s.stats.QueuedBytes, &s.stats.PeakQueuedBytes, r.bytes)
	s.taken.Add(r.n)
	*r = readCounts{}
}

// slab hands out the messages read back from the spool, and the copies of
// their payloads, from chunks: a drain reads back a million small
// messages a second, and two allocations each cost as much as decoding
// them. A chunk stays in memory while one of its messages is in flight;
// messages complete mostly in the order they were read, so few are kept
// for a straggler. Only the goroutine that reads back uses it.
type slab struct {
	msgs []message
	buf  []byte
}

const (
	slabMessages = 64
	slabBytes    = 16 << 10
	// maxSlabbed is the largest payload copied into a chunk; a larger
	// one is allocated alone, so that it cannot keep a chunk of small
	// ones in memory, nor they it.
	maxSlabbed = 1 << 10
)

// message returns a new zero message.
func (a *slab) message() *message {
	if len(a.msgs) == 0 {
		a.msgs = make([]message, slabMessages)
	}
	m := &a.msgs[0]
	a.msgs = a.msgs[1:]
	return m
}

// clone returns a copy of b.
func (a *slab) clone(b []byte) []byte {
	if len(b) > maxSlabbed {
		return bytes.Clone(b)
	}
	if cap(a.buf)-len(a.buf) < len(b) {
		a.buf = make([]byte, 0, slabBytes)
	}
	n := len(a.buf)
	a.buf = append(a.buf, b...)
	// Capped, so that nothing appended to one copy overwrites the next.
	return a.buf[n:len(a.buf):len(a.buf)]
}

// unbuffer accounts n messages of size payload bytes as no longer held in
// memory: emitted, or held on disk only.
func (s *Source) unbuffer(n int, size int64) {
	s.stats.Buffered.Add(-int64(n))
	s.stats.QueuedBytes.Add(-size)
	s.taken.Add(-int64(n))
}

// handOn acknowledges a batch (unless in ModeTree) and queues it for the
// pipeline. It reports false when ctx ended.
func (s *Source) handOn(ctx context.Context, batch []*message) bool {
	if s.cfg.Mode != ModeTree {
		s.ack(batch)
	}
	return s.queueAll(ctx, batch)
}

// ack acknowledges a batch to the broker, and lets go of paho's messages,
// whose payloads may be large.
func (s *Source) ack(batch []*message) {
	for _, m := range batch {
		m.m.Ack()
		m.m = nil
	}
	s.stats.Acked.Add(uint64(len(batch)))
}

// queueAll queues a batch for the pipeline. It reports false when ctx
// ended.
func (s *Source) queueAll(ctx context.Context, batch []*message) bool {
	for _, m := range batch {
		select {
		case s.queue <- m:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// emitBatch bounds the messages decoded together.
const emitBatch = 256

func (s *Source) emitLoop(ctx context.Context, out topology.SourceEmitter) error {
	batch := make([]*message, 0, emitBatch)
	for {
		var err error
		if batch, err = s.next(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("mqtt: %w", err)
		}
		var size int64
		for _, m := range batch {
			size += int64(len(m.payload))
		}
		s.unbuffer(len(batch), size)
		select {
		case s.room <- struct{}{}:
		default:
		}
		if err := s.emit(out, batch); err != nil {
			if ctx.Err() != nil {
				return nil // the topology is stopping
			}
			return fmt.Errorf("mqtt: emit: %w", err)
		}
		clear(batch)
	}
}

// next waits for messages for the pipeline and returns up to emitBatch of
// them in batch: from the backlog in ModeSpool, from the queue otherwise.
func (s *Source) next(ctx context.Context, batch []*message) ([]*message, error) {
	if s.backlog != nil {
		batch, err := s.backlog.Next(ctx, batch, emitBatch)
		s.countRead()
		return batch, err
	}
	select {
	case m := <-s.queue:
		batch = append(batch[:0], m)
	case <-ctx.Done():
		return batch[:0], ctx.Err()
	}
	for len(batch) < emitBatch {
		select {
		case m := <-s.queue:
			batch = append(batch, m)
		default:
			return batch, nil
		}
	}
	return batch, nil
}

// emit decodes msgs and emits their particles. It returns an error when
// the topology did not accept a particle: the messages not done then
// never complete, and are delivered again by the broker or the spool.
// Messages too large or on a topic that does not match TopicTags are
// rejected whole as bad input; unwanted ones are dropped.
func (s *Source) emit(out topology.SourceEmitter, msgs []*message) error {
	if s.cfg.Checkpoints {
		for _, m := range msgs {
			s.positions.Hand(m.seq)
		}
	}
	ok := s.ok[:0]
	for _, m := range msgs {
		m.remaining.Store(1)
		var err error
		switch {
		case m.skip == skipUnwanted:
			s.unwanted(m.topic)
			continue
		case m.skip == skipCopy:
			continue
		case m.skip == skipTooLarge:
			err = fmt.Errorf("%w: %d bytes, more than %d", ErrPayloadTooLarge, m.size, s.cfg.MaxPayload)
		case s.cfg.Payload.TopicTags != "" && !matchTemplate(s.cfg.Payload.TopicTags, m.topic):
			err = fmt.Errorf("%w %q", ErrTopicMismatch, s.cfg.Payload.TopicTags)
		default:
			ok = append(ok, m)
			continue
		}
		s.stats.Invalid.Add(1)
		out.Reject(&particle.DecodeError{Source: m.topic, Line: 1, Err: err}, m.payload)
	}
	s.ok = ok
	defer clear(s.ok)
	// Numbered under one lock, those that turn out to have no particle
	// too: the lock taken once a message cost more than their numbers.
	s.numbers = s.inflight.AddAll(s.numbers[:0], ok)
	for i, m := range ok {
		m.number = s.numbers[i]
	}
	// Counted once per batch: the counters share cache lines with those
	// the engine's goroutines update as trees complete.
	var emitted uint64
	err := s.dec.decode(ok, func(i int, p particle.Particle) error {
		m := ok[i]
		if s.cfg.Checkpoints && s.positions.Next(m.seq, uint64(m.emitted)) {
			m.emitted++
			return nil
		}
		m.remaining.Add(1)
		id := inflight.ID(m.number, m.emitted)
		m.emitted++
		if err := out.EmitTracked(p, id); err != nil {
			return err
		}
		emitted++
		return nil
	}, func(_ int, err error, raw []byte) {
		s.stats.Invalid.Add(1)
		out.Reject(err, bytes.Clone(raw))
	})
	s.stats.Emitted.Add(emitted)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		s.emitted.finish(m)
	}
	s.completeAll(&s.emitted)
	return nil
}

// unwanted counts a message no configured filter matches, logging the
// first: its subscription is one of an earlier run that the broker kept.
func (s *Source) unwanted(topic string) {
	if s.stats.Unwanted.Add(1) == 1 {
		s.cfg.Logger.Warn("mqtt: dropping messages on topics no configured filter matches, from a subscription an earlier run left in the persistent session; they are counted, and the subscription is removed when StateDir records it",
			"client_id", s.cfg.ClientID, "topic", topic)
	}
}

// Ack implements topology.Acknowledger. It never waits on the network:
// in ModeTree the source's own goroutine sends the acknowledgement.
func (s *Source) Ack(msgID uint64) {
	if m, ok := s.inflight.Get(msgID); ok {
		s.finishOne(m)
	}
}

// AckBatch implements topology.BatchAcknowledger: the engine acknowledges
// trees that finished together with one call, which finds their messages
// under one lock of the in-flight table and completes those done under
// one more and one of the spool, where Ack takes each once a particle.
// Like Ack, it never waits on the network.
func (s *Source) AckBatch(msgIDs []uint64) {
	c := &s.acked
	c.found = s.inflight.GetAll(c.found[:0], msgIDs)
	for _, m := range c.found {
		c.finish(m)
	}
	clear(c.found)
	s.completeAll(c)
}

// Fail implements topology.Acknowledger. The engine has sent the particle
// to the dead-letter sink: the message is done with. Like Ack, it never
// waits on the network.
func (s *Source) Fail(msgID uint64, _ acker.Reason, _ error) {
	if m, ok := s.inflight.Get(msgID); ok {
		s.stats.Failed.Add(1)
		s.finishOne(m)
	}
}

// Redeliver implements topology.Acknowledger: it decodes the particle's
// message again, which stays in memory until all of its particles are
// finished.
func (s *Source) Redeliver(msgID uint64) (particle.Particle, error) {
	m, ok := s.inflight.Get(msgID)
	if !ok {
		return particle.Particle{}, fmt.Errorf("mqtt: no message in flight for particle %#x", msgID)
	}
	return redecode(s.cfg.Payload, m, inflight.Place(msgID))
}

// finishOne counts a particle of m, or its emit, finished, and completes
// m when that was the last.
func (s *Source) finishOne(m *message) {
	if m.remaining.Add(-1) != 0 {
		return
	}
	// On the stack: Ack and Fail may run on any goroutine, and Ack once
	// a particle with acking off.
	var numbers [1]uint32
	var seqs [1]uint64
	s.complete([]*message{m}, numbers[:0], seqs[:0])
}

// completing gathers messages all of whose particles finished, to
// complete them together. Each goroutine that completes messages has its
// own.
type completing struct {
	found   []*message // AckBatch's: the messages of the ids acknowledged
	done    []*message
	numbers []uint32
	seqs    []uint64
}

// finish counts a particle of m, or its emit, finished, and adds m to
// those to complete when that was the last.
func (c *completing) finish(m *message) {
	if m.remaining.Add(-1) == 0 {
		c.done = append(c.done, m)
	}
}

// completeAll completes the messages c gathered and empties c.
func (s *Source) completeAll(c *completing) {
	c.numbers, c.seqs = s.complete(c.done, c.numbers[:0], c.seqs[:0])
	clear(c.done)
	c.done = c.done[:0]
}

// complete completes done, messages all of whose particles finished,
// taking each lock once: their numbers are freed and, but with
// checkpoints, their records leave the spool or, in ModeTree, they may be
// acknowledged. numbers and seqs are scratch space, returned to be used
// again.
func (s *Source) complete(done []*message, numbers []uint32, seqs []uint64) ([]uint32, []uint64) {
	if len(done) == 0 {
		return numbers, seqs
	}
	for _, m := range done {
		if m.number != 0 {
			numbers = append(numbers, m.number)
		}
	}
	s.inflight.RemoveAll(numbers)
	if s.cfg.Checkpoints {
		// The records leave the spool once a checkpoint covers them.
		return numbers, seqs
	}
	s.stats.Completed.Add(uint64(len(done)))
	switch {
	case s.spool != nil:
		for _, m := range done {
			if m.seq != 0 {
				seqs = append(seqs, m.seq)
			}
		}
		s.spool.CompleteAll(seqs)
	case s.cfg.Mode == ModeTree:
		s.mu.Lock()
		for _, m := range done {
			m.done = true
		}
		s.mu.Unlock()
		select {
		case s.ackKick <- struct{}{}:
		default:
		}
	}
	return numbers, seqs
}

// startAcks starts the goroutine that sends ModeTree's acknowledgements,
// until Close.
func (s *Source) startAcks() {
	s.ackStop, s.ackDone = make(chan struct{}), make(chan struct{})
	go s.acks()
}

// acks acknowledges the longest prefix of done messages whenever one
// completes, and once more when stopped.
func (s *Source) acks() {
	defer close(s.ackDone)
	for {
		select {
		case <-s.ackKick:
			s.release()
		case <-s.ackStop:
			s.release()
			return
		}
	}
}

// release acknowledges the longest prefix of done messages, in order, as
// MQTT 3.1.1 requires.
func (s *Source) release() {
	s.mu.Lock()
	n := 0
	for n < len(s.order) && s.order[n].done {
		n++
	}
	s.ready = append(s.ready[:0], s.order[:n]...)
	rest := copy(s.order, s.order[n:])
	clear(s.order[rest:])
	s.order = s.order[:rest]
	s.mu.Unlock()
	s.ack(s.ready)
	clear(s.ready) // let the acknowledged messages be collected
}

// Close acknowledges the messages whose trees completed, disconnects from
// the broker and closes the spool, writing the completions of the trees
// that finished. Call it after the topology's Run returned; later calls
// return the first call's result.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		if s.ackStop != nil {
			close(s.ackStop)
			<-s.ackDone
		}
		if s.conn != nil {
			s.conn.stop()
		}
		if s.backlog != nil {
			s.backlog.Close()
		}
		if s.spool != nil {
			s.closeErr = s.spool.Close()
		}
	})
	return s.closeErr
}
