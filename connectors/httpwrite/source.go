package httpwrite

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/httpguard"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/topology"
	"github.com/sensorstorm/sensorstorm/topology/inflight"
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
	// 413, and 503 (the backlog at its disk quota, the in-flight bound
	// reached, stopping, or the spool failing).
	BadRequests, Unauthorized, TooLarge, Unavailable atomic.Uint64
	// Emitted counts particles emitted; Invalid bad lines rejected to the
	// dead-letter sink; Failed particles the engine gave up on; Completed
	// bodies all of whose particles were done; Recovered the bodies a
	// previous run left in the spool, emitted again before the bodies
	// written since (possibly twice in all).
	Emitted, Invalid, Failed, Completed, Recovered atomic.Uint64
	// InFlightBytes is the bytes of the bodies being received, decoded
	// and spooled, which Config.MaxInFlightBytes bounds. Those durable
	// wait in the backlog (BacklogStats).
	InFlightBytes atomic.Int64
}

// Source is a topology.Source that serves InfluxDB's write API and emits
// the particles of the line protocol written to it. It is also a
// topology.Acknowledger: run it with acking on, so that a body leaves the
// spool only once all its particles were processed.
//
// Run listens, serves and emits until ctx ends. The bodies durable in the
// spool are its backlog, which the pipeline reads at its own pace, in the
// order the bodies became durable. The spool outlives Run, so
// that trees completing while the topology drains are recorded: the
// topology owns it, and closes the source once it drained (see
// topology.Source). Outside a topology, call Close.
//
// A write is answered 204 only once its body is durable in the spool in
// Config.StateDir (one fsync shared by the writes that arrive together),
// the same guarantee as a PUBACK in the MQTT source's spool mode. A body
// leaves the spool once every particle of it was processed or, in a run
// that takes checkpoints (Config.Checkpoints), once a checkpoint covers
// it: the source is then a topology.Positioner, a restored run resumes at
// the checkpoint's body and particle, and no body is processed twice.
// Memory holds a bounded part of the backlog (Config.MaxInFlightBytes);
// the rest waits on disk and is read back in order (BacklogStats), those
// of a previous run first. A stalled sink or a long window grows the
// backlog, not the clients' refusals, up to the disk quota
// (Config.Backlog).
//
// Bodies are line protocol, plain or with Content-Encoding: gzip, decoded
// by particle.Decoder one line at a time: a gzip body is kept, spooled
// and decoded as sent, never inflated whole, and its inflated bytes count
// against Config.MaxInFlightBytes as they are decoded.
//
// # Answers
//
// As InfluxDB gives them:
//
//   - 204: every line written.
//   - 400: bad lines: malformed, or stamped more than Config.FutureBound
//     after the write was received, which the pipeline would reject
//     (InfluxDB would store them; answering 204 and dropping them would
//     tell the client they were written). The valid lines of the body are
//     written (durable before the answer, as with 204) and the bad ones
//     are not: the JSON body names the line and column of each, the
//     first in InfluxDB's "line" member, all in an "errors" list. Each
//     bad line is also counted and sent to the dead-letter sink with its
//     position (topology.SourceEmitter.Reject), like any bad input. A
//     missing bucket or db, an unknown precision and a broken gzip
//     stream are 400 too, with nothing written.
//   - 401: the token is missing or wrong.
//   - 413: a body larger than Config.MaxBodySize after decompression;
//     the message names the limit.
//   - 503 with Retry-After: the backlog is at its disk quota (the wait
//     asked is the time the pipeline takes to make room for the body, at
//     its drain rate), the bodies being received hold
//     Config.MaxInFlightBytes already, the process is stopping, or the
//     spool cannot be written (which also stops Run with the error).
//     InfluxDB's clients write again after the wait. A pipeline that is
//     behind is no reason for a 503.
//
// The probes answer minimally and truthfully: a write to any bucket or
// database is taken, so the bucket asked for exists, CREATE DATABASE
// succeeds, and the buckets and databases listed are those written to (or
// created) since the start. Any other query is a 400 that says so, any
// other path a 404 naming those served.
type Source struct {
	cfg   Config
	stats Stats
	ran   atomic.Bool

	decoders [particle.Second + 1]sync.Pool // of *bodyDecoder, by precision
	buffers  sync.Pool                      // of *bytes.Buffer, for bodies and records

	// Set by Run before it serves; records before firstSeq were left by
	// an earlier run.
	spool    *spool.Spool
	backlog  *spool.Backlog[*write]
	firstSeq uint64
	out      topology.SourceEmitter
	addr     net.Addr
	ready    chan struct{} // closed once listening
	// backlogged is backlog for BacklogStats, which may be called before
	// Run set it.
	backlogged atomic.Pointer[spool.Backlog[*write]]

	// order holds the bodies appended to the spool and not yet in the
	// backlog, in sequence order: requests sync concurrently, and the
	// backlog takes the bodies in order once durable. orderMu also
	// keeps appends in the order of order.
	orderMu sync.Mutex
	order   []*write

	inflight inflight.Table[*write] // the bodies with particles in the pipeline
	// positions maps particles to bodies for checkpoints
	// (Config.Checkpoints).
	positions spool.Positions

	started time.Time // when Run started listening, for /ready
	names   names     // the databases and buckets the probes list

	stopping atomic.Bool
	failed   chan error // a spool write failed; size one: the first stops Run

	closeOnce sync.Once
	closeErr  error
}

// write is one body in the spool, waiting in the backlog or with
// particles in the pipeline. It keeps the body as received, plain or
// gzip, to decode its particles one at a time when they are emitted and
// again when the engine redelivers one: the particles are not kept.
type write struct {
	seq    uint64
	number uint32 // in Source.inflight: its particles' message ids are inflight.ID(number, k)
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

// BacklogStats returns what waits in the spool for the pipeline, and
// false before Run opened it. It is safe to call while the source runs.
func (s *Source) BacklogStats() (spool.BacklogStats, bool) {
	b := s.backlogged.Load()
	if b == nil {
		return spool.BacklogStats{}, false
	}
	return b.Stats(), true
}

// Run implements topology.Source. It opens the spool, whose bodies a
// previous run left not completed the pipeline gets first, then listens
// on Config.Addr and serves until ctx ends, emitting the bodies in the
// backlog as the pipeline takes them. Then it stops listening, answers
// 503 to writes still coming on open connections, and waits up to
// Config.ShutdownTimeout for the requests being handled. It returns nil
// when ctx ended, or the error that stopped it: the spool could not be
// opened, written or read back, the address could not be listened on.
func (s *Source) Run(ctx context.Context, out topology.SourceEmitter) error {
	if !s.ran.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	sp, err := spool.Open(s.cfg.StateDir, s.cfg.Spool)
	if err != nil {
		return fmt.Errorf("httpwrite: %w", err)
	}
	s.spool, s.out, s.firstSeq = sp, out, sp.Durable()
	if err := s.skipCovered(); err != nil {
		return err
	}
	bcfg := s.cfg.Backlog
	bcfg.MemoryBytes = s.cfg.MaxInFlightBytes
	bcfg.Name, bcfg.Logger, bcfg.Now = "httpwrite", s.cfg.Logger, s.cfg.Wall.Now
	bl, err := spool.NewBacklog(sp, bcfg, s.readBack)
	if err != nil {
		return fmt.Errorf("httpwrite: %w", err)
	}
	s.backlog = bl
	s.backlogged.Store(bl)
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
	s.started = s.cfg.Wall.Now()
	close(s.ready)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ectx, stopEmit := context.WithCancel(ctx)
	defer stopEmit()
	emitted := make(chan error, 1)
	go func() { emitted <- s.emitLoop(ectx) }()
	var runErr error
	emitting := true
	select {
	case err := <-served:
		stopEmit()
		<-emitted
		return fmt.Errorf("httpwrite: %w", err)
	case runErr = <-s.failed:
	case runErr = <-emitted:
		emitting = false
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
	stopEmit()
	if emitting {
		<-emitted
	}
	return runErr
}

// fail stops Run with err, a spool write error, unless an earlier one did.
func (s *Source) fail(err error) {
	select {
	case s.failed <- fmt.Errorf("httpwrite: %w", err):
	default:
	}
}

// readBack makes the write of a body the backlog read back from the
// spool. Its bad lines were dead-lettered when it was written, and are
// skipped.
func (s *Source) readBack(seq uint64, r spool.Record) (*write, error) {
	prec, err := precisionOf(r.Source)
	if err != nil {
		return nil, fmt.Errorf("%w: record %d: %w", spool.ErrBadRecord, seq, err)
	}
	if seq < s.firstSeq {
		s.stats.Recovered.Add(1)
	}
	return &write{seq: seq, source: r.Source, prec: prec, recv: r.Received, body: bytes.Clone(r.Payload)}, nil
}

// emitLoop emits the bodies of the backlog, one at a time, as the
// pipeline takes their particles, until ctx ends. It returns the error
// reading the backlog, which stops Run.
func (s *Source) emitLoop(ctx context.Context) error {
	// One body at a time: what is handed out is out of the backlog's
	// memory bound.
	buf := make([]*write, 0, 1)
	for {
		batch, err := s.backlog.Next(ctx, buf, 1)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("httpwrite: %w", err)
		}
		for _, w := range batch {
			taken, err := s.emit(w)
			if err != nil {
				return fmt.Errorf("httpwrite: %w: record %d: %w", spool.ErrBadRecord, w.seq, err)
			}
			if !taken {
				// The topology is stopping, and ends ctx.
				<-ctx.Done()
				return nil
			}
		}
		clear(batch)
	}
}

// handOn adds the bodies now durable to the backlog, in sequence order.
func (s *Source) handOn() {
	s.orderMu.Lock()
	defer s.orderMu.Unlock()
	durable := s.spool.Durable()
	n := 0
	for ; n < len(s.order) && s.order[n].seq < durable; n++ {
		w := s.order[n]
		s.backlog.Add(w.seq, w, int64(len(w.body)+len(w.source)), w.recv)
	}
	rest := copy(s.order, s.order[n:])
	clear(s.order[rest:])
	s.order = s.order[:rest]
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

// badLine is a malformed line: a *particle.DecodeError and the line.
type badLine struct {
	err *particle.DecodeError
	raw []byte
}

// bodyDecoder decodes the bodies of one precision; lines without a
// timestamp take recv, the time the body was received truncated to the
// precision.
type bodyDecoder struct {
	dec  *particle.Decoder
	zr   *gzip.Reader // nil until the first gzip body
	recv int64
}

// beyond reports whether t, a line's timestamp, is more than
// Config.FutureBound after recv, the time its body was received. It is
// judged against recv, kept with the body, so that a body read back
// from the spool is split into the same good and bad lines as when it
// was answered.
func (s *Source) beyond(t, recv int64) bool {
	b := int64(s.cfg.FutureBound)
	return b >= 0 && recv < math.MaxInt64-b && t > recv+b
}

// futureError is the error of a line beyond Config.FutureBound.
func (s *Source) futureError(source string, line int, t, recv int64) *particle.DecodeError {
	return &particle.DecodeError{Source: source, Line: line, Err: fmt.Errorf("%w: %s is more than %s (future_bound) after the write was received, at %s",
		topology.ErrFutureTimestamp, time.Unix(0, t).UTC().Format(time.RFC3339Nano), s.cfg.FutureBound, time.Unix(0, recv).UTC().Format(time.RFC3339Nano))}
}

// isGzip reports whether a body as received is gzip: it starts with
// gzip's magic and method, as no line protocol does (no UTF-8 text
// starts with 0x1f 0x8b: 0x8b is a continuation byte).
func isGzip(b []byte) bool { return len(b) >= 3 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 8 }

// each decodes body, a body as received (line protocol, plain or gzip)
// named source, whose lines without a timestamp take recv truncated to
// prec, one line at a time: a gzip body is never inflated whole. It calls fn for each line,
// with the particle and a nil *particle.DecodeError, or with the error
// and the line's bytes (valid until fn returns) for a bad line, which
// is also one beyond Config.FutureBound; fn
// returns false to stop. inflated, when not nil, wraps a gzip body's
// decompressed stream, to meter it. each returns the error that stopped
// the reading: a broken gzip stream, or inflated's. It is safe for
// concurrent use: each call takes a decoder of its own from a pool.
func (s *Source) each(source string, prec particle.Precision, recv int64, body []byte,
	inflated func(io.Reader) io.Reader, fn func(p particle.Particle, bad *particle.DecodeError, raw []byte) bool) error {
	bd, ok := s.decoders[prec].Get().(*bodyDecoder)
	if !ok {
		bd = &bodyDecoder{}
		dec, err := particle.NewDecoderBytes(nil, "", particle.DecoderConfig{
			Precision:   prec,
			DefaultTime: func() int64 { return bd.recv },
		})
		if err != nil {
			return err
		}
		bd.dec = dec
	}
	defer s.decoders[prec].Put(bd)
	bd.recv = recv - recv%int64(prec.Duration())
	if isGzip(body) {
		var err error
		if bd.zr == nil {
			bd.zr, err = gzip.NewReader(bytes.NewReader(body))
		} else {
			err = bd.zr.Reset(bytes.NewReader(body))
		}
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		var r io.Reader = bd.zr
		if inflated != nil {
			r = inflated(r)
		}
		bd.dec.Reset(r, source)
	} else {
		bd.dec.ResetBytes(body, source)
	}
	for {
		var p particle.Particle
		err := bd.dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return nil
		}
		var bad *particle.DecodeError
		if err != nil {
			var ok bool
			if bad, ok = errors.AsType[*particle.DecodeError](err); !ok {
				return err
			}
		} else if s.beyond(p.Time, recv) {
			bad = s.futureError(source, bd.dec.Line(), p.Time, recv)
		}
		if !fn(p, bad, bd.dec.Raw()) {
			return nil
		}
	}
}

// emit emits a spooled body's particles, decoding it again. It reports
// false when the topology did not accept one, because it is stopping:
// the body stays in the spool, replayed at the next start; and the error
// that stopped the decoding, which a body scanned at its write never
// has (one read back may).
func (s *Source) emit(w *write) (bool, error) {
	w.remaining.Store(1)
	w.number = s.inflight.Add(w)
	if s.cfg.Checkpoints {
		s.positions.Hand(w.seq)
	}
	// k numbers the body's good particles, those a restore leaves out
	// too, so that Redeliver finds the k-th again.
	var k uint32
	taken := true
	err := s.each(w.source, w.prec, w.recv, w.body, nil, func(p particle.Particle, bad *particle.DecodeError, _ []byte) bool {
		if bad != nil {
			return true // dead-lettered at the write
		}
		place := k
		k++
		if s.cfg.Checkpoints && s.positions.Next(w.seq, uint64(place)) {
			return true
		}
		w.remaining.Add(1)
		if err := s.out.EmitTracked(p, inflight.ID(w.number, place)); err != nil {
			taken = false
			return false
		}
		s.stats.Emitted.Add(1)
		return true
	})
	if !taken || err != nil {
		return taken, err
	}
	s.finish(w)
	return true, nil
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
// body again, which stays in memory as received until all of its
// particles are finished. The particle is the same as the first time:
// lines without a timestamp take the receive time kept with the body.
func (s *Source) Redeliver(msgID uint64) (particle.Particle, error) {
	w, ok := s.inflight.Get(msgID)
	if !ok {
		return particle.Particle{}, fmt.Errorf("httpwrite: no body in flight for particle %#x", msgID)
	}
	k := inflight.Place(msgID)
	var (
		got   particle.Particle
		found bool
		i     uint32
	)
	err := s.each(w.source, w.prec, w.recv, w.body, nil, func(p particle.Particle, bad *particle.DecodeError, _ []byte) bool {
		if bad != nil {
			return true
		}
		if i == k {
			got, found = p, true
			return false
		}
		i++
		return true
	})
	switch {
	case found:
		return got, nil
	case err != nil:
		return particle.Particle{}, fmt.Errorf("httpwrite: body of %s: %w", w.source, err)
	}
	return particle.Particle{}, fmt.Errorf("httpwrite: body of %s has no particle %d", w.source, k)
}

// finish marks a body complete in the spool once all its particles are
// done, unless checkpoints decide when it leaves the spool (Committed);
// the mark is written with the next Sync (or Close).
func (s *Source) finish(w *write) {
	if w.remaining.Add(-1) != 0 {
		return
	}
	s.inflight.Remove(w.number)
	if s.cfg.Checkpoints {
		return
	}
	s.stats.Completed.Add(1)
	s.spool.Complete(w.seq)
}

// admit takes n more bytes of the in-flight bound for a body that holds
// own bytes of it already, reporting false when they do not fit. A body
// is always let through while it is the only one in flight.
func (s *Source) admit(n, own int64) bool {
	for {
		cur := s.stats.InFlightBytes.Load()
		if cur != own && cur+n > s.cfg.MaxInFlightBytes {
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
		if s.backlog != nil {
			s.backlog.Close()
		}
		if s.spool != nil {
			s.closeErr = s.spool.Close()
		}
	})
	return s.closeErr
}
