package influxdb

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// Stats counts what a Sink did. The counters are safe to read while it
// runs.
type Stats struct {
	// Written counts lines the server took (its 204, or the rest of a
	// partial write), acknowledged; Rejected particles that cannot be
	// encoded or whose lines the server refused, dead-lettered.
	Written, Rejected atomic.Uint64
	// Requests counts write requests made; Outages those that met an
	// outage (429, 5xx, a network error), which are written again.
	Requests, Outages atomic.Uint64
}

// Sink is an operation that writes data particles to an InfluxDB write
// API as line protocol, in batches. It holds each input and acknowledges
// it only once the server took its line: it answered 204 to the write, or
// named other lines in a partial write. It writes a batch when it is
// full, when it is as old as the flush interval (at the next tick or
// watermark) and at the end of the stream. What each answer does:
//
//   - 204: every line of the batch is acknowledged.
//   - 400 or 422, a partial write: the lines the server names are
//     dead-lettered (operation.ErrRejected, with the server's message in a
//     *ServerError) and the rest acknowledged. InfluxDB 1.x quotes the
//     lines it cannot parse and names the field or tag of the points it
//     dropped (a field type conflict: the lines of that measurement whose
//     field has another type); 2.x and sensorstorm's own endpoint number
//     the lines. When the answer names fewer lines than the server says it
//     dropped, the rest of the batch is written again; when it names none,
//     each half in turn, down to the lines refused alone. InfluxDB
//     overwrites a point written again with the same values, so nothing
//     is stored twice.
//   - 413: the batch is written in halves; a line too large alone is
//     dead-lettered.
//   - 429, 5xx (503 among them) and network errors, timeouts included:
//     an outage. Nothing is acknowledged or dead-lettered; the call fails
//     with operation.ErrDestination, which the engine retries with
//     backoff while the bolt takes no input (backpressure), and gives up
//     on after its give-up time (topology.ErrGaveUp, naming the last
//     error). A Retry-After in the answer is honoured: no write is made
//     before it passed.
//   - 401, 403, 404 (no such database or bucket) and other answers: the
//     server refuses for good, and the run stops at once
//     (operation.ErrRefused) with the server's message.
//
// A particle line protocol cannot represent (a non-finite float, a name
// with a control character) is dead-lettered when it comes. A write that
// the server took but whose answer was lost (a timeout, a connection cut)
// is written again: InfluxDB overwrites the point with itself, while
// VictoriaMetrics keeps both samples unless it deduplicates
// (-dedup.minScrapeInterval).
//
// With checkpoints the Sink needs no snapshot and is exactly once in
// effect on InfluxDB: a restored run writes again what was written after
// the checkpoint it is restored from, and InfluxDB overwrites each point
// (measurement, tags and time) with the same fields, so the database ends
// as after a run never killed. A server that keeps both samples of a
// point written twice (VictoriaMetrics without deduplication) gets them
// at least once.
//
// One Sink may serve several bolt instances: each instance writes its own
// batches. Close releases its idle connections.
type Sink struct {
	cfg   Config
	url   string
	auth  func(*http.Request)
	stats Stats
	gz    sync.Pool // of *gzip.Writer

	mu      sync.Mutex
	pending map[operation.Emitter]*batch
	// notBefore is when the server that answered 429 or 503 with
	// Retry-After may be written to again, and busy that answer.
	notBefore time.Time
	busy      error
	// refused is the error of the server's refusal for good, which every
	// later write returns without asking again.
	refused error
	closed  bool
}

// batch is the lines an emitter holds, waiting to be written. Only the
// emitter's bolt instance uses it, so it needs no lock.
type batch struct {
	body  []byte // the lines, each ending with a newline
	lines []held
	since time.Time // when its first line came
}

// held is an input waiting for its line to be written.
type held struct {
	p      particle.Particle
	anchor operation.Anchor
	end    int // where its line ends in the batch's body, after the newline
}

var (
	_ operation.Operation        = (*Sink)(nil)
	_ operation.WatermarkHandler = (*Sink)(nil)
	_ operation.TickHandler      = (*Sink)(nil)
	_ operation.Flusher          = (*Sink)(nil)
)

// NewSink returns a Sink for cfg, after applying defaults and validating
// it. It makes no request yet.
func NewSink(cfg Config) (*Sink, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, _, _ := writeURL(cfg.URL, cfg.Precision)
	s := &Sink{cfg: cfg, url: u, pending: map[operation.Emitter]*batch{}}
	switch {
	case cfg.Token != "":
		s.auth = func(r *http.Request) { r.Header.Set("Authorization", "Token "+cfg.Token) }
	case cfg.Username != "":
		s.auth = func(r *http.Request) { r.SetBasicAuth(cfg.Username, cfg.Password) }
	default:
		s.auth = func(*http.Request) {}
	}
	return s, nil
}

// Stats returns the sink's counters.
func (s *Sink) Stats() *Stats { return &s.stats }

// Process implements operation.Operation: it encodes in and holds it for
// the next batch, after writing the batch of out if it is full. A particle
// line protocol cannot represent is rejected (operation.ErrRejected); an
// error wrapping operation.ErrDestination means that nothing was held and
// the call may be made again.
func (s *Sink) Process(ctx context.Context, in particle.Particle, out operation.Emitter) error {
	b, err := s.batch(out)
	if err != nil {
		return err
	}
	if len(b.lines) >= s.cfg.BatchSize {
		if err := s.write(ctx, out, b); err != nil {
			return err
		}
	}
	body, err := particle.AppendLineProtocol(b.body, &in, s.cfg.Precision)
	if err != nil {
		s.stats.Rejected.Add(1)
		return fmt.Errorf("%w: influxdb: %w", operation.ErrRejected, err)
	}
	if len(b.lines) == 0 {
		b.since = s.cfg.Wall.Now()
	}
	b.body = body
	b.lines = append(b.lines, held{p: in, anchor: out.Hold(), end: len(body)})
	return nil
}

// OnWatermark implements operation.WatermarkHandler: it writes the batch
// of out if it is full or as old as Config.FlushInterval.
func (s *Sink) OnWatermark(ctx context.Context, _ int64, out operation.Emitter) error {
	return s.writeDue(ctx, out)
}

// OnTick implements operation.TickHandler: it writes the batch of out if
// it is full or as old as Config.FlushInterval, so that a slow stream is
// written without waiting for a full batch.
func (s *Sink) OnTick(ctx context.Context, _ int64, out operation.Emitter) error {
	return s.writeDue(ctx, out)
}

// Flush implements operation.Flusher: it writes what out holds.
func (s *Sink) Flush(ctx context.Context, out operation.Emitter) error {
	b, err := s.batch(out)
	if err != nil {
		return err
	}
	return s.write(ctx, out, b)
}

// Close releases the client's idle connections. The engine calls it
// after Flush; calls after the first do nothing.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.cfg.Client.CloseIdleConnections()
	}
	s.closed = true
	return nil
}

// batch returns the batch of out.
func (s *Sink) batch(out operation.Emitter) (*batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("influxdb: sink closed")
	}
	b := s.pending[out]
	if b == nil {
		b = &batch{}
		s.pending[out] = b
	}
	return b, nil
}

func (s *Sink) writeDue(ctx context.Context, out operation.Emitter) error {
	b, err := s.batch(out)
	if err != nil {
		return err
	}
	if len(b.lines) < s.cfg.BatchSize && s.cfg.Wall.Now().Sub(b.since) < s.cfg.FlushInterval {
		return nil
	}
	return s.write(ctx, out, b)
}

// write writes the lines of b and acknowledges those the server took,
// fails as rejected those it refused, and keeps the others, for the call
// to be made again after an outage.
func (s *Sink) write(ctx context.Context, out operation.Emitter, b *batch) error {
	if len(b.lines) == 0 {
		return nil
	}
	s.mu.Lock()
	wait, busy, refused := s.notBefore.Sub(s.cfg.Wall.Now()), s.busy, s.refused
	s.mu.Unlock()
	switch {
	case refused != nil:
		return refused
	case wait > 0:
		return fmt.Errorf("%w: influxdb: waiting %v as the server asked: %w", operation.ErrDestination, wait.Round(time.Millisecond), busy)
	}
	all := make([]int, len(b.lines))
	for i := range all {
		all[i] = i
	}
	done := make([]bool, len(b.lines))
	err := s.resolve(ctx, out, b, all, done)
	b.keep(done)
	return err
}

// keep keeps the lines of b that are not done.
func (b *batch) keep(done []bool) {
	body, lines, start := b.body[:0], b.lines[:0], 0
	for i, h := range b.lines {
		line := b.body[start:h.end]
		start = h.end
		if done[i] {
			continue
		}
		// body never passes start: copying forwards is safe.
		body = append(body, line...)
		h.end = len(body)
		lines = append(lines, h)
	}
	clear(b.lines[len(lines):])
	b.body, b.lines = body, lines
}

// resolve writes the lines idx of b, in order, and settles each: done
// once acknowledged or failed as rejected. A partial write's lines that
// the server names are rejected and the rest acknowledged; when its
// answer does not name all it refused, the rest is written again, and
// when it names none, each half in turn, down to the single line it
// refuses. InfluxDB overwrites a point written again with the same
// values, so what it took already is not stored twice.
func (s *Sink) resolve(ctx context.Context, out operation.Emitter, b *batch, idx []int, done []bool) error {
	err := s.post(ctx, b.bodyOf(idx))
	var se *ServerError
	switch {
	case err == nil:
		s.ack(out, b, idx, done)
		return nil
	case !errors.As(err, &se):
		s.stats.Outages.Add(1)
		return fmt.Errorf("%w: influxdb: write to %s: %w", operation.ErrDestination, s.cfg.URL, err)
	case se.StatusCode == http.StatusTooManyRequests || se.StatusCode >= 500:
		s.stats.Outages.Add(1)
		if se.RetryAfter > 0 {
			s.mu.Lock()
			s.notBefore, s.busy = s.cfg.Wall.Now().Add(se.RetryAfter), se
			s.mu.Unlock()
		}
		return fmt.Errorf("%w: %w", operation.ErrDestination, se)
	case se.StatusCode == http.StatusRequestEntityTooLarge && len(idx) > 1:
		return s.halves(ctx, out, b, idx, done)
	case se.StatusCode != http.StatusBadRequest && se.StatusCode != http.StatusUnprocessableEntity &&
		se.StatusCode != http.StatusRequestEntityTooLarge:
		// 401, 403, 404 (no such database or bucket) and the like: no
		// retry or other line can help.
		err := fmt.Errorf("%w: %w", operation.ErrRefused, se)
		s.mu.Lock()
		s.refused = err
		s.mu.Unlock()
		return err
	}
	lines := make([][]byte, len(idx))
	ps := make([]*particle.Particle, len(idx))
	for j, i := range idx {
		lines[j] = bytes.TrimSuffix(b.line(i), []byte{'\n'})
		ps[j] = &b.lines[i].p
	}
	bad, all := se.named(lines, ps)
	if len(bad) == 0 {
		if len(idx) == 1 {
			bad, all = []int{0}, true
		} else {
			return s.halves(ctx, out, b, idx, done)
		}
	}
	rest := idx[:0:0]
	refused := make(map[int]bool, len(bad))
	for _, j := range bad {
		i := idx[j]
		refused[i] = true
		done[i] = true
		s.stats.Rejected.Add(1)
		out.Fail(b.lines[i].anchor, fmt.Errorf("%w: %w", operation.ErrRejected, se))
	}
	for _, i := range idx {
		if !refused[i] {
			rest = append(rest, i)
		}
	}
	if all {
		s.ack(out, b, rest, done)
		return nil
	}
	if len(rest) == 0 {
		return nil
	}
	return s.resolve(ctx, out, b, rest, done)
}

// halves resolves each half of idx in turn.
func (s *Sink) halves(ctx context.Context, out operation.Emitter, b *batch, idx []int, done []bool) error {
	half := len(idx) / 2
	if err := s.resolve(ctx, out, b, idx[:half], done); err != nil {
		return err
	}
	return s.resolve(ctx, out, b, idx[half:], done)
}

func (s *Sink) ack(out operation.Emitter, b *batch, idx []int, done []bool) {
	for _, i := range idx {
		done[i] = true
		out.Ack(b.lines[i].anchor)
	}
	s.stats.Written.Add(uint64(len(idx)))
}

// line returns line i of b, with its newline.
func (b *batch) line(i int) []byte {
	start := 0
	if i > 0 {
		start = b.lines[i-1].end
	}
	return b.body[start:b.lines[i].end]
}

// bodyOf returns the lines idx of b, in order: b's body when they are all
// of them.
func (b *batch) bodyOf(idx []int) []byte {
	if len(idx) == len(b.lines) {
		return b.body
	}
	var body []byte
	for _, i := range idx {
		body = append(body, b.line(i)...)
	}
	return body
}

// requestBody is a request's body that tells when the transport is done
// with it.
type requestBody struct {
	*bytes.Reader
	once   sync.Once
	closed chan struct{}
}

// Close implements io.Closer.
func (r *requestBody) Close() error {
	r.once.Do(func() { close(r.closed) })
	return nil
}

func (r *requestBody) wait() { <-r.closed }

// post sends body to the write URL. It returns nil for a 204, a
// *ServerError for another answer, and the client's error when there was
// none.
func (s *Sink) post(ctx context.Context, body []byte) error {
	s.stats.Requests.Add(1)
	if s.cfg.Gzip {
		var err error
		if body, err = s.compress(body); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	// The transport may read the body after Do returned (a server that
	// answers before it read it all): body is not let go of, for the
	// batch to change, before the transport closed it.
	rb := &requestBody{Reader: bytes.NewReader(body), closed: make(chan struct{})}
	defer rb.wait()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, rb)
	if err != nil {
		rb.Close()
		return err
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if s.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	s.auth(req)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(io.LimitReader(resp.Body, maxMessage))
	if err != nil {
		return err
	}
	// The rest is read so that the connection can serve the next write.
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusOK {
		return nil
	}
	return serverError(resp.StatusCode, resp.Header, msg)
}

// compress returns body gzipped.
func (s *Sink) compress(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := s.gz.Get().(*gzip.Writer)
	if zw == nil {
		zw = gzip.NewWriter(&buf)
	} else {
		zw.Reset(&buf)
	}
	defer s.gz.Put(zw)
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
