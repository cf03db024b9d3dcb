package httpwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/httpguard"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Stats counts what a Source did. The counters are safe to read while it
// runs.
type Stats struct {
	// Requests counts write requests; Accepted those whose body was made
	// durable (answered 204, or 400 for a partial write); Bytes the body
	// bytes accepted, after decompression.
	Requests, Accepted, Bytes atomic.Uint64
	// BadRequests, Unauthorized, TooLarge and Unavailable count the
	// write requests answered with an error and nothing written: 400 or
	// 415 (a bad query, encoding or gzip stream, or no valid line), 401,
	// 413, and 503 (spool full, stopping, or the spool failing).
	BadRequests, Unauthorized, TooLarge, Unavailable atomic.Uint64
	// Emitted counts particles emitted; Invalid bad lines rejected to the
	// dead-letter sink; Failed particles the engine gave up on; Completed
	// bodies all of whose particles were done; Replayed the bodies a
	// previous run left in the spool, emitted again at start (possibly
	// twice in all).
	Emitted, Invalid, Failed, Completed, Replayed atomic.Uint64
	// InFlightBytes is the bytes of the bodies spooled and not completed,
	// which Config.MaxInFlightBytes bounds.
	InFlightBytes atomic.Int64
}

// Source is a topology.Source that serves InfluxDB's write API and emits
// the particles of the line protocol written to it. It is also a
// topology.Acknowledger: run it with acking on, so that a body leaves the
// spool only once all its particles were processed.
//
// Run listens, serves and emits until ctx ends. The spool outlives Run, so
// that trees completing while the topology drains are recorded: call
// Close after the topology's Run returned.
type Source struct {
	cfg   Config
	stats Stats
	ran   atomic.Bool

	decoders [particle.Second + 1]sync.Pool // of *bodyDecoder, by precision
	buffers  sync.Pool                      // of *bytes.Buffer, for bodies and records

	// Set by Run before it serves.
	spool *spool.Spool
	out   topology.SourceEmitter
	addr  net.Addr
	ready chan struct{} // closed once listening

	inflight topology.InFlight[*write] // the bodies with particles in the pipeline

	stopping atomic.Bool
	failed   chan error // a spool write failed; size one: the first stops Run

	closeOnce sync.Once
	closeErr  error
}

// write is one body in the spool whose particles are in the pipeline. It
// keeps the body, to decode a particle again when the engine redelivers
// it: the particles are not kept.
type write struct {
	seq    uint64
	number uint32 // in Source.inflight: its particles' message ids are MessageID(number, k)
	// source, prec and recv are what the body is decoded with.
	source string
	prec   particle.Precision
	recv   int64
	body   []byte
	// remaining counts the particles not finished, plus one while they
	// are being emitted.
	remaining atomic.Int32
}

var (
	_ topology.Source       = (*Source)(nil)
	_ topology.Acknowledger = (*Source)(nil)
)

// NewSource returns a Source for cfg, after applying defaults and
// validating it. It neither opens the spool nor listens: Run does.
func NewSource(cfg Config) (*Source, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, ready: make(chan struct{}), failed: make(chan error, 1)}, nil
}

// Stats returns the source's counters.
func (s *Source) Stats() *Stats { return &s.stats }

// Ready returns a channel closed once Run listens.
func (s *Source) Ready() <-chan struct{} { return s.ready }

// Addr returns the address Run listens on (with the port chosen when
// Config.Addr has port 0), or nil before Ready is closed.
func (s *Source) Addr() net.Addr {
	select {
	case <-s.ready:
		return s.addr
	default:
		return nil
	}
}

// Run implements topology.Source. It opens the spool and emits what a
// previous run left there, then listens on Config.Addr and serves until
// ctx ends. Then it stops listening, answers 503 to writes still coming
// on open connections, and waits up to Config.ShutdownTimeout for the
// requests being handled. It returns nil when ctx ended, or the error
// that stopped it: the spool could not be opened or written, the address
// could not be listened on.
func (s *Source) Run(ctx context.Context, out topology.SourceEmitter) error {
	if !s.ran.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	sp, err := spool.Open(s.cfg.StateDir, s.cfg.Spool)
	if err != nil {
		return fmt.Errorf("httpwrite: %w", err)
	}
	s.spool, s.out = sp, out
	if err := s.replay(ctx); err != nil || ctx.Err() != nil {
		return err
	}
	ln, err := httpguard.Listen(s.cfg.Addr, s.cfg.Limits)
	if err != nil {
		return fmt.Errorf("httpwrite: %w", err)
	}
	s.addr = ln.Addr()
	srv := httpguard.NewServer(s.handler(), s.cfg.Limits, s.cfg.Logger)
	s.cfg.Logger.Info("httpwrite: listening", "addr", s.addr.String())
	if s.cfg.Token == "" {
		httpguard.WarnExposed(s.cfg.Logger, "httpwrite", s.addr)
	}
	close(s.ready)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var runErr error
	select {
	case err := <-served:
		return fmt.Errorf("httpwrite: %w", err)
	case runErr = <-s.failed:
	case <-ctx.Done():
	}
	s.stopping.Store(true)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.cfg.Logger.Warn("httpwrite: requests still running at shutdown; closing their connections", "err", err)
		_ = srv.Close()
	}
	<-served // http.ErrServerClosed
	return runErr
}

// fail stops Run with err, a spool write error, unless an earlier one did.
func (s *Source) fail(err error) {
	select {
	case s.failed <- fmt.Errorf("httpwrite: %w", err):
	default:
	}
}

// replay emits the bodies a previous run left in the spool. Their bad
// lines were dead-lettered then, and are skipped.
func (s *Source) replay(ctx context.Context) error {
	err := s.spool.PendingRecords(func(seq uint64, r spool.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		prec, err := precisionOf(r.Source)
		if err != nil {
			return fmt.Errorf("%w: record %d: %w", spool.ErrBadRecord, seq, err)
		}
		b, err := s.decode(r.Source, prec, r.Received, r.Payload)
		if err != nil {
			return err
		}
		s.stats.Replayed.Add(1)
		w := &write{seq: seq, source: r.Source, prec: prec, recv: r.Received, body: bytes.Clone(r.Payload)}
		s.stats.InFlightBytes.Add(int64(len(w.body)))
		if !s.emit(w, b.particles) {
			return ctx.Err()
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("httpwrite: %w", err)
	}
	return nil
}

// precisionOf returns the precision named in a spool record's source, the
// request's path and query.
func precisionOf(source string) (particle.Precision, error) {
	u, err := url.Parse(source)
	if err != nil {
		return 0, err
	}
	if p := u.Query().Get("precision"); p != "" {
		return particle.ParsePrecision(p)
	}
	return particle.Nanosecond, nil
}

// body is a decoded request body.
type body struct {
	particles []particle.Particle
	bad       []badLine
}

// badLine is a malformed line: a *particle.DecodeError and the line.
type badLine struct {
	err *particle.DecodeError
	raw []byte
}

// bodyDecoder is a line-protocol decoder whose lines without a timestamp
// take recv, the time the body was received.
type bodyDecoder struct {
	dec  *particle.Decoder
	recv int64
}

// decode decodes a body of line protocol named source (the request's path
// and query), in which lines without a timestamp take recv. It is safe for
// concurrent use: each call takes a decoder of its own from a pool.
func (s *Source) decode(source string, prec particle.Precision, recv int64, b []byte) (body, error) {
	bd, ok := s.decoders[prec].Get().(*bodyDecoder)
	if !ok {
		bd = &bodyDecoder{}
		dec, err := particle.NewDecoderBytes(nil, "", particle.DecoderConfig{
			Precision:   prec,
			DefaultTime: func() int64 { return bd.recv },
		})
		if err != nil {
			return body{}, err
		}
		bd.dec = dec
	}
	defer s.decoders[prec].Put(bd)
	bd.recv = recv
	bd.dec.ResetBytes(b, source)
	out := body{particles: make([]particle.Particle, 0, bytes.Count(b, []byte{'\n'})+1)}
	for {
		var p particle.Particle
		err := bd.dec.Decode(&p)
		if err == nil {
			out.particles = append(out.particles, p)
			continue
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		de, ok := errors.AsType[*particle.DecodeError](err)
		if !ok {
			return out, fmt.Errorf("decode: %w", err) // no read errors from bytes
		}
		out.bad = append(out.bad, badLine{err: de, raw: bytes.Clone(bd.dec.Raw())})
	}
}

// emit emits a spooled body's particles. It reports false when the
// topology did not accept one, because it is stopping: the body stays in
// the spool, replayed at the next start.
func (s *Source) emit(w *write, ps []particle.Particle) bool {
	w.remaining.Store(1)
	w.number = s.inflight.Add(w)
	for k, p := range ps {
		w.remaining.Add(1)
		if err := s.out.EmitTracked(p, topology.MessageID(w.number, uint32(k))); err != nil {
			return false
		}
		s.stats.Emitted.Add(1)
	}
	s.finish(w)
	return true
}

// Ack implements topology.Acknowledger.
func (s *Source) Ack(msgID uint64) {
	if w, ok := s.inflight.Get(msgID); ok {
		s.finish(w)
	}
}

// Fail implements topology.Acknowledger. The engine has sent the particle
// to the dead-letter sink: the body is done with.
func (s *Source) Fail(msgID uint64, _ acker.Reason, _ error) {
	if w, ok := s.inflight.Get(msgID); ok {
		s.stats.Failed.Add(1)
		s.finish(w)
	}
}

// Redeliver implements topology.Acknowledger: it decodes the particle's
// body again, which stays in memory until all of its particles are
// finished. The particle is the same as the first time: lines without a
// timestamp take the receive time kept with the body.
func (s *Source) Redeliver(msgID uint64) (particle.Particle, error) {
	w, ok := s.inflight.Get(msgID)
	if !ok {
		return particle.Particle{}, fmt.Errorf("httpwrite: no body in flight for particle %#x", msgID)
	}
	b, err := s.decode(w.source, w.prec, w.recv, w.body)
	if k := topology.MessagePlace(msgID); err == nil && int(k) < len(b.particles) {
		return b.particles[k], nil
	}
	return particle.Particle{}, fmt.Errorf("httpwrite: body of %s has no particle %d: %v", w.source, topology.MessagePlace(msgID), err)
}

// finish marks a body complete in the spool once all its particles are
// done; the mark is written with the next Sync (or Close).
func (s *Source) finish(w *write) {
	if w.remaining.Add(-1) != 0 {
		return
	}
	s.inflight.Remove(w.number)
	s.stats.Completed.Add(1)
	s.stats.InFlightBytes.Add(-int64(len(w.body)))
	s.spool.Complete(w.seq)
}

// admit takes n bytes of the in-flight bound, reporting false when they
// do not fit. One body is always let through when nothing is in flight.
func (s *Source) admit(n int64) bool {
	for {
		cur := s.stats.InFlightBytes.Load()
		if cur > 0 && cur+n > s.cfg.MaxInFlightBytes {
			return false
		}
		if s.stats.InFlightBytes.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// Close closes the spool, writing the completions of the bodies whose
// particles finished. Call it after the topology's Run returned; later
// calls return the first call's result.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		if s.spool != nil {
			s.closeErr = s.spool.Close()
		}
	})
	return s.closeErr
}
