package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/state"
)

// staging is the write-ahead side of a Sink that publishes at
// checkpoints (DESIGN.md, "Sinks commit with checkpoints"). Every
// publication gets an ordinal, its place in the output since the run
// started; a snapshot holds those not yet out, and once the checkpoint
// is complete the publisher publishes them and then a retained mark, the
// ordinal below which everything is out, which a restored sink reads to
// drop what its checkpoint holds and the broker has already. Its fields
// are guarded by the Sink's mu.
type staging struct {
	// run names the mark's topic: random at a run's start, kept by
	// snapshots.
	run string
	// emitter is the one instance the sink serves.
	emitter operation.Emitter
	// first is the ordinal of pubs[0]; the ordinals follow on.
	first uint64
	pubs  []outMessage
	// sealed: the ordinals below it are in a snapshot; committed: in a
	// complete checkpoint. The publisher publishes below committed.
	sealed, committed uint64
	// unmarked tells, after a restore, that the mark must be read
	// before anything is published; marked is the mark read: a restored
	// run stages again, with the same ordinals, what followed its
	// checkpoint, and what the mark covers is out already.
	unmarked bool
	marked   uint64
	// ended tells that the stream ended (Flush), final that the sink is
	// closing after it: then no checkpoint may follow, and everything
	// staged is published.
	ended, final bool
	// gen counts the restores: a batch published before the last one
	// drops nothing from what it restored.
	gen uint64
	// err is why the publisher gave up: the connection, or the
	// subscription to the mark, was refused for good.
	err error

	wake     chan struct{} // wakes the publisher
	progress chan struct{} // closed, and replaced, when pubs shrinks
	stop     context.CancelFunc
	done     chan struct{} // closed when the publisher returned
}

// stagingVersion is the version of the state a Sink's snapshot writes.
const stagingVersion = 1

// next returns the ordinal of the next publication staged.
func (st *staging) next() uint64 { return st.first + uint64(len(st.pubs)) }

// due returns how many of pubs may be published.
func (st *staging) due() uint64 {
	switch {
	case st.final:
		return uint64(len(st.pubs))
	case st.committed > st.first:
		return st.committed - st.first
	}
	return 0
}

// startStaging starts the staging side with a run id of its own, unless
// it runs. s.mu is held.
func (s *Sink) startStaging(run string) *staging {
	if s.staging != nil {
		return s.staging
	}
	if run == "" {
		run = newRunID()
	}
	ctx, stop := context.WithCancel(context.Background())
	st := &staging{run: run, wake: make(chan struct{}, 1), progress: make(chan struct{}), stop: stop, done: make(chan struct{})}
	s.staging = st
	go s.publishStaged(ctx, st)
	return st
}

// newRunID returns a random id.
func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// stagedBehind is how many times MaxInflight publications the publisher
// may be behind the checkpoints before stage blocks.
const stagedBehind = 8

// stage adds a publication for out, to be published once the checkpoint
// holding it is complete; Process connected first. It blocks while the
// publisher is stagedBehind times MaxInflight publications behind the
// checkpoints: backpressure while the broker is away.
func (s *Sink) stage(ctx context.Context, out operation.Emitter, m outMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.startStaging("")
	if st.emitter == nil {
		st.emitter = out
	}
	if st.emitter != out {
		return fmt.Errorf("%w: mqtt sink %q: used by more than one bolt instance, and it publishes at checkpoints, which each instance takes at its own point of the stream: give the sink's bolt one instance, or set at_least_once", operation.ErrRefused, s.cfg.Topic)
	}
	for st.err == nil && st.due() >= stagedBehind*uint64(s.cfg.MaxInflight) {
		progress := st.progress
		s.mu.Unlock()
		select {
		case <-progress:
		case <-ctx.Done():
		}
		s.mu.Lock()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if st.err != nil {
		return fmt.Errorf("%w: %w", operation.ErrRefused, st.err)
	}
	if len(st.pubs) == 0 && st.first < st.marked {
		st.first++ // out before the restore
		return nil
	}
	st.pubs = append(st.pubs, m)
	return nil
}

// Committed implements operation.Committer: what the snapshots taken so
// far hold may be published.
func (s *Sink) Committed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.staging; st != nil && st.committed < st.sealed {
		st.committed = st.sealed
		st.poke()
	}
}

// poke wakes the publisher.
func (st *staging) poke() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// snapshot writes what is staged and not yet out, and seals it. s.mu is
// held.
func (st *staging) snapshot(w *state.Writer) {
	st.sealed = st.next()
	w.PutString(st.run)
	w.PutUvarint(st.first)
	w.PutLen(len(st.pubs))
	for _, p := range st.pubs {
		w.PutString(p.topic)
		w.PutBytes(p.payload)
	}
}

// restoreStaging reads what snapshot wrote: it comes from a complete
// checkpoint, so the publisher publishes it at once, after reading the
// mark.
func (s *Sink) restoreStaging(r *state.Reader) error {
	run, first, n := r.ReadString(), r.ReadUvarint(), r.ReadLen()
	pubs := make([]outMessage, 0, n)
	for range n {
		pubs = append(pubs, outMessage{topic: r.ReadString(), payload: r.ReadBytes()})
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("mqtt sink: restore: %w", err)
	}
	s.mu.Lock()
	st := s.staging
	s.mu.Unlock()
	if run == "" && st == nil {
		return nil
	}
	if _, err := s.connection(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A shared sink restored again (its instance moved away and back)
	// drops what it staged since: the checkpoint is what was committed.
	st = s.startStaging(run)
	if run == "" {
		run = newRunID()
	}
	st.run, st.first, st.pubs, st.unmarked, st.marked, st.ended = run, first, pubs, len(pubs) > 0 || first > 0, 0, false
	st.sealed, st.committed = st.next(), st.next()
	st.gen++
	st.poke()
	return nil
}

// publishStaged publishes what the checkpoints committed, in order,
// until ctx ends, keeping up to MaxInflight publications in flight.
// Whenever MaxInflight more are confirmed, and whenever it has nothing
// left in flight, it publishes the mark of what is out and drops that
// from what snapshots hold. A publication that failed or was not
// confirmed in time is made again; a refusal for good stops it.
func (s *Sink) publishStaged(ctx context.Context, st *staging) {
	defer close(st.done)
	var (
		// inflight are the tokens of the ordinals from base on, in order.
		inflight  []paho.Token
		base, gen uint64
		lastMark  uint64 // the last mark published
	)
	for ctx.Err() == nil {
		s.mu.Lock()
		if gen != st.gen || len(inflight) == 0 {
			// A restore leaves what was in flight to the mark it reads.
			gen, base, lastMark, inflight = st.gen, st.first, st.first, inflight[:0]
		}
		unmarked, markTopic := st.unmarked, s.cfg.CommitTopic+"/"+st.run
		var send []outMessage
		if !unmarked {
			for next, end := base+uint64(len(inflight)), st.first+st.due(); next < end && len(inflight)+len(send) < s.cfg.MaxInflight; next++ {
				send = append(send, st.pubs[next-st.first])
			}
		}
		s.mu.Unlock()
		var err error
		switch {
		case unmarked:
			err = s.dropMarked(ctx, st, markTopic)
		case len(send) == 0 && len(inflight) == 0:
			select {
			case <-ctx.Done():
			case <-st.wake:
			}
			continue
		default:
			inflight, err = s.sendStaged(ctx, send, inflight)
			if err == nil {
				var confirmed int
				confirmed, err = s.confirmOldest(ctx, st, gen, base, inflight)
				inflight, base = inflight[confirmed:], base+uint64(confirmed)
			}
			if err == nil && base > lastMark && (base-lastMark >= uint64(s.cfg.MaxInflight) || len(inflight) == 0) {
				// Not waited for: a later mark covers one lost, and a
				// stopping sink's disconnection lets it through.
				_, err = s.publish(ctx, s.conn, outMessage{topic: markTopic, payload: strconv.AppendUint(nil, base, 10), mark: true})
				if err == nil {
					lastMark = base
					s.drop(st, gen, base)
				}
			}
		}
		if err == nil {
			continue
		}
		if ce := (*ConnectError)(nil); errors.As(err, &ce) || errors.Is(err, ErrMarkRefused) {
			s.mu.Lock()
			st.err = err
			close(st.progress)
			st.progress = make(chan struct{})
			s.mu.Unlock()
			return
		}
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("mqtt sink: publishing what a checkpoint committed failed: trying again", "err", err)
		}
	}
}

// sendStaged publishes msgs and returns inflight with their tokens.
func (s *Sink) sendStaged(ctx context.Context, msgs []outMessage, inflight []paho.Token) ([]paho.Token, error) {
	for _, m := range msgs {
		tok, err := s.publish(ctx, s.conn, m)
		if err != nil {
			return inflight, err
		}
		s.stats.Published.Add(1)
		inflight = append(inflight, tok)
	}
	return inflight, nil
}

// confirmOldest waits for the confirmation of the oldest publication in
// flight, ordinal base, and returns how many from it on are confirmed. One
// that failed or timed out is made again, in place.
func (s *Sink) confirmOldest(ctx context.Context, st *staging, gen, base uint64, inflight []paho.Token) (int, error) {
	if err := wait(ctx, inflight[0], s.cfg.PublishTimeout); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		s.mu.Lock()
		var m outMessage
		again := gen == st.gen
		if again {
			m = st.pubs[base-st.first]
		}
		s.mu.Unlock()
		if again {
			tok, perr := s.publish(ctx, s.conn, m)
			if perr != nil {
				return 0, perr
			}
			s.stats.Republished.Add(1)
			inflight[0] = tok
		}
		return 0, err
	}
	n := 1
	for n < len(inflight) {
		select {
		case <-inflight[n].Done():
		default:
			s.stats.Confirmed.Add(uint64(n))
			return n, nil
		}
		if inflight[n].Error() != nil {
			break
		}
		n++
	}
	s.stats.Confirmed.Add(uint64(n))
	return n, nil
}

// drop removes the publications below ordinal upto, unless a restore
// came since gen, and tells those waiting for room. s.mu is not held.
func (s *Sink) drop(st *staging, gen, upto uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen == st.gen && upto > st.first {
		k := min(upto-st.first, uint64(len(st.pubs)))
		st.pubs = st.pubs[k:]
		st.first += k
	}
	close(st.progress)
	st.progress = make(chan struct{})
}

// dropMarked reads the mark of the run and drops what it says is out.
func (s *Sink) dropMarked(ctx context.Context, st *staging, markTopic string) error {
	s.mu.Lock()
	gen := st.gen
	s.mu.Unlock()
	mark, err := s.readMark(ctx, markTopic)
	if err != nil {
		return err
	}
	s.drop(st, gen, mark)
	s.mu.Lock()
	if gen == st.gen {
		st.unmarked, st.marked = false, mark
	}
	s.mu.Unlock()
	return nil
}

// readMark returns the ordinal the retained message on topic holds, 0
// if none. The broker sends a retained message when the subscription is
// made, before anything published after; so it subscribes, publishes a
// probe to the topic and reads until the probe comes back.
func (s *Sink) readMark(ctx context.Context, topic string) (uint64, error) {
	cl, err := s.conn.ready(ctx)
	if err != nil {
		return 0, err
	}
	probe := "probe " + newRunID()
	got := make(chan uint64, 1)
	var mark uint64
	tok := cl.Subscribe(topic, 1, func(_ paho.Client, m paho.Message) {
		if string(m.Payload()) == probe {
			select {
			case got <- mark:
			default:
			}
			return
		}
		if v, err := strconv.ParseUint(string(m.Payload()), 10, 64); err == nil {
			mark = max(mark, v)
		}
	})
	if err := wait(ctx, tok, s.cfg.PublishTimeout); err != nil {
		return 0, fmt.Errorf("mqtt sink: subscribe to the mark %s: %w", topic, err)
	}
	if st, ok := tok.(*paho.SubscribeToken); ok && st.Result()[topic] >= 0x80 {
		return 0, fmt.Errorf("%w: %s", ErrMarkRefused, topic)
	}
	defer cl.Unsubscribe(topic)
	if err := wait(ctx, cl.Publish(topic, 1, false, probe), s.cfg.PublishTimeout); err != nil {
		return 0, fmt.Errorf("mqtt sink: probe the mark %s: %w", topic, err)
	}
	timer := time.NewTimer(s.cfg.PublishTimeout)
	defer timer.Stop()
	select {
	case m := <-got:
		return m, nil
	case <-timer.C:
		// The broker took the subscription and the probe, and did not
		// deliver it: it drops what the client may not publish or read
		// (MQTT 3.1.1 cannot say so).
		return 0, fmt.Errorf("%w: %s: the probe published there did not come back within %v", ErrMarkRefused, topic, s.cfg.PublishTimeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// wait waits at most timeout for tok, and returns its error; a token
// done when the time is up counts as done.
func wait(ctx context.Context, tok paho.Token, timeout time.Duration) error {
	timer := time.NewTimer(max(timeout, 0))
	defer timer.Stop()
	select {
	case <-tok.Done():
	case <-timer.C:
	case <-ctx.Done():
	}
	select {
	case <-tok.Done():
		return tok.Error()
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return ErrPublishTimeout
}

// closeStaging publishes what is left to publish (what the checkpoints
// committed, and everything once the stream ended), within
// PublishTimeout, and stops the publisher.
func (s *Sink) closeStaging() error {
	s.mu.Lock()
	st := s.staging
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	err := s.awaitStaged(st)
	st.stop()
	<-st.done
	return err
}

// awaitStaged waits until what is due is published, or the publisher
// made no progress for PublishTimeout.
func (s *Sink) awaitStaged(st *staging) error {
	for {
		s.mu.Lock()
		st.final = st.ended
		left := st.due()
		if st.unmarked {
			left++
		}
		progress, failed := st.progress, st.err
		s.mu.Unlock()
		if left == 0 || failed != nil {
			return failed
		}
		st.poke()
		timer := time.NewTimer(s.cfg.PublishTimeout)
		select {
		case <-progress:
			timer.Stop()
		case <-timer.C:
			return fmt.Errorf("mqtt sink: %d publications due not confirmed at close: %w", left, ErrPublishTimeout)
		}
	}
}
