package mqtt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/state"
)

// SinkStats counts what a Sink did. The counters are safe to read while it
// runs.
type SinkStats struct {
	// Published counts publications; Confirmed those the broker
	// confirmed (for QoS 0: that were written); Republished those made
	// again because paho failed them or the broker did not confirm them
	// in time; Invalid particles the topic template cannot name, rejected.
	Published, Confirmed, Republished, Invalid atomic.Uint64
	// Connects and ConnectionsLost count connection events.
	Connects, ConnectionsLost atomic.Uint64
}

// Sink is an operation that publishes every particle it processes to an
// MQTT topic made from a template. It holds each input until the broker
// confirmed its publication (PUBACK for QoS 1, PUBCOMP for QoS 2), so the
// input's tree completes only then; at most MaxInflight publications wait
// for confirmation, beyond which Process blocks: backpressure. While the
// connection is lost, publications made are sent again on reconnection,
// and Process waits for it.
//
// A particle the template cannot name (it lacks a tag the template uses)
// is bad input: it is counted and rejected (operation.ErrRejected), which
// the engine dead-letters and acknowledges, never retries.
//
// With checkpoints the Sink publishes each particle once, although a
// broker cannot take a publication back: it publishes nothing at once,
// keeps what it would publish in its snapshot, and publishes it once the
// checkpoint is complete (operation.Committer), followed by a retained
// mark on CommitTopic of how far it got; a restored Sink reads the mark
// and publishes only what is not out. A kill in the moment between the
// broker's confirmations and the mark gives duplicates of that batch.
// Output then waits for the checkpoints, and such a Sink serves one bolt
// instance. With AtLeastOnce it publishes at once instead, and what it
// published after the checkpoint a run is restored from is published
// again, with the same particles (the same identities, event times and
// values), for receivers that deduplicate.
//
// Without checkpoints, one Sink may serve several bolt instances. It
// connects on the first Process, and Close disconnects.
type Sink struct {
	cfg   SinkConfig
	tmpl  []topicPart
	stats SinkStats
	// broker is the URL of the latest connection attempt.
	broker atomic.Pointer[string]

	mu      sync.Mutex
	conn    *conn
	enc     particle.Encoder
	pending map[operation.Emitter][]publication
	staging *staging
	closed  bool
}

type publication struct {
	tok      paho.Token
	anchor   operation.Anchor
	deadline time.Time
	msg      outMessage
}

// outMessage is what a publication publishes.
type outMessage struct {
	topic   string
	payload []byte
	// mark tells the retained mark of a staging sink (QoS 1 at least)
	// from output.
	mark bool
}

// topicPart is a literal or, with tag set, a tag reference of a topic
// template.
type topicPart struct {
	text string
	tag  bool
}

var (
	_ operation.Operation        = (*Sink)(nil)
	_ operation.WatermarkHandler = (*Sink)(nil)
	_ operation.Flusher          = (*Sink)(nil)
	_ operation.TickHandler      = (*Sink)(nil)
)

// NewSink returns a Sink for cfg, after applying defaults and validating
// it. It does not connect yet.
func NewSink(cfg SinkConfig) (*Sink, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg, pending: map[operation.Emitter][]publication{}}
	s.enc.SetPrecision(cfg.Precision)
	rest := cfg.Topic
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		j := strings.IndexByte(rest[max(i, 0):], '}') + max(i, 0)
		if i < 0 || j < i {
			s.tmpl = append(s.tmpl, topicPart{text: rest})
			break
		}
		if i > 0 {
			s.tmpl = append(s.tmpl, topicPart{text: rest[:i]})
		}
		s.tmpl = append(s.tmpl, topicPart{text: rest[i+1 : j], tag: true})
		rest = rest[j+1:]
	}
	return s, nil
}

// Stats returns the sink's counters.
func (s *Sink) Stats() *SinkStats { return &s.stats }

// Topic returns the topic p is published to. A tag value fills one topic
// level: its "/", "+", "#", NUL and "%" are percent-encoded (%2F, %2B,
// %23, %00, %25), so that "in/x" gives the level "in%2Fx". An error
// wrapping ErrTopicTemplate reports a tag p lacks or whose value is
// empty.
func (s *Sink) Topic(p *particle.Particle) (string, error) {
	var b strings.Builder
	for _, part := range s.tmpl {
		if !part.tag {
			b.WriteString(part.text)
			continue
		}
		v, ok := p.Tag(part.text)
		if !ok && part.text == "measurement" {
			v, ok = p.Measurement, true
		}
		if !ok || v == "" {
			return "", fmt.Errorf("%w %q: particle has no usable tag %q", ErrTopicTemplate, s.cfg.Topic, part.text)
		}
		b.WriteString(escapeLevel(v))
	}
	return b.String(), nil
}

// Process implements operation.Operation: it publishes in and holds it
// until the broker confirms, waiting while the connection is down. A
// particle the template cannot name is rejected; an error (unencodable
// particle, connection refused for good) fails in.
func (s *Sink) Process(ctx context.Context, in particle.Particle, out operation.Emitter) error {
	topic, err := s.Topic(&in)
	if err != nil {
		s.stats.Invalid.Add(1)
		return fmt.Errorf("%w: %w", operation.ErrRejected, err)
	}
	cn, err := s.connection()
	if err != nil {
		return err
	}
	s.mu.Lock()
	payload, err := s.payload(&in)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	msg := outMessage{topic: topic, payload: payload}
	a := out.Hold()
	if a.Checkpointed() && !s.cfg.AtLeastOnce {
		// The engine acknowledges in at the checkpoint, which holds msg.
		out.Ack(a)
		return s.stage(ctx, out, msg)
	}
	tok, err := s.publish(ctx, cn, msg)
	if err != nil {
		return err
	}
	s.stats.Published.Add(1)
	s.mu.Lock()
	s.pending[out] = append(s.pending[out], publication{tok: tok, anchor: a, deadline: s.cfg.Wall.Now().Add(s.cfg.PublishTimeout), msg: msg})
	full := len(s.pending[out]) >= s.cfg.MaxInflight
	s.mu.Unlock()
	// The input is held now: a failing broker is reported by the next
	// OnTick or OnWatermark, which the engine retries without taking input.
	if err := s.settle(ctx, out, full); err != nil && !errors.Is(err, operation.ErrDestination) {
		return err
	}
	return nil
}

// publish publishes m once connected. paho refuses a publication at once
// while disconnected; one made while connected it keeps, and sends again
// after a reconnection if need be.
func (s *Sink) publish(ctx context.Context, cn *conn, m outMessage) (paho.Token, error) {
	qos, retain := s.cfg.QoS.Byte(), s.cfg.Retain
	if m.mark {
		qos, retain = max(qos, 1), true
	}
	for {
		cl, err := cn.ready(ctx)
		if err != nil {
			return nil, err
		}
		tok := cl.Publish(m.topic, qos, retain, m.payload)
		select {
		case <-tok.Done():
			if errors.Is(tok.Error(), paho.ErrNotConnected) {
				continue // lost meanwhile: wait for the reconnection
			}
		default:
		}
		return tok, nil
	}
}

// OnWatermark implements operation.WatermarkHandler: after each round of
// released particles it waits for their confirmations, so that their
// trees complete now rather than with the next particle.
func (s *Sink) OnWatermark(ctx context.Context, _ int64, out operation.Emitter) error {
	return s.settle(ctx, out, true)
}

// OnTick implements operation.TickHandler: it acknowledges the inputs
// whose publication was confirmed since, and fails those that timed out,
// so that trees complete while no particle comes: after a reconnection
// paho sends again what was in flight, and confirms it later.
func (s *Sink) OnTick(ctx context.Context, _ int64, out operation.Emitter) error {
	return s.settle(ctx, out, false)
}

// Flush implements operation.Flusher: it waits for every confirmation.
// A sink that publishes at checkpoints publishes what it staged when it
// closes, since no checkpoint may follow the end of the stream.
func (s *Sink) Flush(ctx context.Context, out operation.Emitter) error {
	s.mu.Lock()
	if s.staging != nil {
		s.staging.ended = true
	}
	s.mu.Unlock()
	return s.settle(ctx, out, true)
}

// settle acknowledges the inputs whose publication was confirmed. A
// publication that paho failed (its write failed: the connection was lost)
// or that the broker did not confirm in time is made again, once connected,
// and its input stays held: the failure is the broker's, not the data's,
// so the input is never failed or dead-lettered for it. MQTT allows the
// duplicate should paho's store send it too. With wait, settle waits for
// every publication of out to be confirmed; without, it reports a failure
// as operation.ErrDestination, for the engine to back off and call again.
func (s *Sink) settle(ctx context.Context, out operation.Emitter, wait bool) error {
	for {
		s.mu.Lock()
		pubs := s.pending[out]
		delete(s.pending, out)
		s.mu.Unlock()
		keep := pubs[:0]
		var failed error
		for _, p := range pubs {
			if wait {
				select {
				case <-p.tok.Done():
				case <-time.After(p.deadline.Sub(s.cfg.Wall.Now())):
				case <-ctx.Done():
				}
			}
			var err error
			select {
			case <-p.tok.Done():
				if err = p.tok.Error(); err == nil {
					s.stats.Confirmed.Add(1)
					out.Ack(p.anchor)
					continue
				}
			default:
				if s.cfg.Wall.Now().Before(p.deadline) {
					keep = append(keep, p)
					continue
				}
				err = ErrPublishTimeout
			}
			failed = err
			if ctx.Err() == nil {
				if tok, perr := s.publish(ctx, s.conn, p.msg); perr == nil {
					s.stats.Republished.Add(1)
					p.tok, p.deadline = tok, s.cfg.Wall.Now().Add(s.cfg.PublishTimeout)
				} else {
					failed = perr
				}
			}
			keep = append(keep, p)
		}
		if len(keep) > 0 {
			s.mu.Lock()
			s.pending[out] = append(keep, s.pending[out]...)
			s.mu.Unlock()
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case !wait && failed != nil:
			return fmt.Errorf("%w: %w", operation.ErrDestination, failed)
		case !wait || len(keep) == 0:
			return nil
		}
	}
}

var (
	_ operation.Snapshotter = (*Sink)(nil)
	_ operation.Committer   = (*Sink)(nil)
)

// Snapshot implements operation.Snapshotter. A sink that publishes at
// checkpoints writes what it staged and has not yet published; the
// checkpoint's Committed lets it go out.
//
// With AtLeastOnce, it waits until the broker confirmed every
// publication made so far. With checkpoints, an input is acknowledged
// once a checkpoint after it completes, not once its publication is
// confirmed: one still unconfirmed at the commit would be lost with the
// process, as a file's unwritten bytes would without the file sink's
// fsync at the barrier. A publication that failed, or that the broker
// did not confirm within PublishTimeout, fails the checkpoint: settle
// publishes it again, and the next checkpoint waits for it.
func (s *Sink) Snapshot(w *state.Writer) error {
	if err := s.awaitPending(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w.PutUvarint(stagingVersion)
	if s.staging == nil {
		w.PutString("")
		w.PutUvarint(0)
		w.PutLen(0)
		return nil
	}
	s.staging.snapshot(w)
	return nil
}

// awaitPending waits until the broker confirmed every publication made
// at once.
func (s *Sink) awaitPending() error {
	s.mu.Lock()
	var pubs []publication
	for _, ps := range s.pending {
		pubs = append(pubs, ps...)
	}
	s.mu.Unlock()
	for _, p := range pubs {
		if err := wait(context.Background(), p.tok, p.deadline.Sub(s.cfg.Wall.Now())); err != nil {
			return fmt.Errorf("mqtt sink: publication to %s: %w", p.msg.topic, err)
		}
	}
	return nil
}

// Restore implements operation.Snapshotter: what the snapshot staged is
// published at once, after the sink read the mark of what is out
// already. With AtLeastOnce, what it published after the checkpoint, the
// restored run publishes again.
func (s *Sink) Restore(r *state.Reader) error {
	if r.Len() == 0 {
		return nil // written by a version that staged nothing
	}
	if v := r.ReadUvarint(); v != stagingVersion {
		return fmt.Errorf("%w: mqtt sink: state version %d, want %d", state.ErrMalformed, v, stagingVersion)
	}
	return s.restoreStaging(r)
}

// payload encodes p. s.mu is held.
func (s *Sink) payload(p *particle.Particle) ([]byte, error) {
	if s.cfg.Format == FormatJSON {
		obj := map[string]any{"measurement": p.Measurement, "time": p.Time}
		for _, t := range p.Tags {
			obj[t.Key] = t.Value
		}
		for _, f := range p.Fields {
			obj[f.Key] = jsonValue(f.Value)
		}
		return json.Marshal(obj)
	}
	s.enc.Reset()
	if err := s.enc.Encode(p); err != nil {
		return nil, err
	}
	b := s.enc.Bytes()
	// paho keeps the payload until the broker confirmed it.
	return append([]byte(nil), b[:len(b)-1]...), nil
}

func jsonValue(v particle.Value) any {
	switch v.Kind() {
	case particle.KindFloat:
		return v.FloatValue()
	case particle.KindInt:
		return v.IntValue()
	case particle.KindUint:
		return v.UintValue()
	case particle.KindBool:
		return v.BoolValue()
	}
	return v.StringValue()
}

// connection returns the connection, starting it on first use.
func (s *Sink) connection() (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("mqtt: sink closed")
	}
	if s.conn != nil {
		return s.conn, nil
	}
	opts := paho.NewClientOptions()
	opts.SetCleanSession(false)
	cn, err := newConn(&s.cfg.ConnConfig, connCounters{&s.stats.Connects, &s.stats.ConnectionsLost, &s.broker}, opts, nil)
	if err != nil {
		return nil, err
	}
	cn.start()
	s.conn = cn
	return cn, nil
}

// Close publishes what checkpoints committed (and, once the stream
// ended, everything staged), within PublishTimeout of the last
// confirmation, and disconnects. The engine calls it after Flush.
func (s *Sink) Close() error {
	s.mu.Lock()
	closed, cn := s.closed, s.conn
	s.closed = true
	s.mu.Unlock()
	if closed {
		return nil
	}
	err := s.closeStaging()
	if cn != nil {
		cn.stop()
	}
	return err
}
