package httpwrite

import (
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/spool"
)

// api is the version of InfluxDB's write API a request uses: its query
// parameters, authentication and error bodies differ.
type api uint8

const (
	apiV1 api = iota + 1 // POST /write?db=...
	apiV2                // POST /api/v2/write?bucket=...
)

// maxListed bounds the bad lines an error body lists one by one.
const maxListed = 100

// handler routes InfluxDB's write endpoints and the probes clients make
// before writing.
func (s *Source) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v2/write", func(w http.ResponseWriter, r *http.Request) { s.write(w, r, apiV2) })
	mux.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) { s.write(w, r, apiV1) })
	mux.HandleFunc("/ping", s.ping)
	mux.HandleFunc("/health", s.health)
	mux.HandleFunc("/ready", s.readiness)
	mux.HandleFunc("/api/v2/buckets", s.buckets)
	mux.HandleFunc("/query", s.query)
	mux.HandleFunc("/", notFound)
	return mux
}

// ping answers InfluxDB's GET /ping: 204, ready.
func (s *Source) ping(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Influxdb-Version", "sensorstorm")
	w.WriteHeader(http.StatusNoContent)
}

// health answers InfluxDB 2's GET /health: 200 and status "pass" while
// writes are taken, 503 and "fail" once stopping.
func (s *Source) health(w http.ResponseWriter, _ *http.Request) {
	status, code, msg := "pass", http.StatusOK, "ready for writes"
	if s.stopping.Load() {
		status, code, msg = "fail", http.StatusServiceUnavailable, "stopping"
	}
	writeJSON(w, code, map[string]any{"name": "sensorstorm", "status": status, "message": msg, "checks": []any{}})
}

// requestError is a write refused with nothing written.
type requestError struct {
	status int
	msg    string
	// retry is the wait a 503 asks, when not Config.RetryAfter.
	retry time.Duration
}

func (e *requestError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) *requestError {
	return &requestError{status: status, msg: fmt.Sprintf(format, args...)}
}

// write handles a write request: the body is decoded, its valid lines
// made durable in the spool, and only then is the request answered. The
// body waits in the backlog for the pipeline, however far behind it is:
// neither this answer nor the next request waits for it.
func (s *Source) write(w http.ResponseWriter, r *http.Request, a api) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		a.respond(w, http.StatusMethodNotAllowed, "method not allowed: write with POST", nil)
		return
	}
	s.stats.Requests.Add(1)
	sc, err := s.accept(w, r, a)
	switch {
	case err != nil:
		s.refused(w, a, err, sc.listed)
	case sc.bad == 0:
		w.WriteHeader(http.StatusNoContent)
	default:
		a.respond(w, http.StatusBadRequest, fmt.Sprintf("partial write error (%d written): %d bad lines, the first %s",
			sc.valid, sc.bad, position(sc.listed[0].err)), sc.listed)
	}
}

// scanned is what the first pass over a body found.
type scanned struct {
	valid, bad int
	listed     []badLine // the first maxListed bad lines, for the answer
	size       int64     // the body's bytes, decompressed
}

// accept checks a write request, reads its body as sent (plain or gzip),
// scans it line by line, dead-letters its bad lines and spools it. It
// adds it to the backlog once durable, and returns what the scan found,
// or a *requestError. The body's bytes as sent, and a gzip body's bytes
// decompressed, are taken from the in-flight bound as they are read, and
// given back once the body is durable or refused.
func (s *Source) accept(w http.ResponseWriter, r *http.Request, a api) (scanned, error) {
	if !s.authorized(r, a) {
		return scanned{}, refuse(http.StatusUnauthorized, "unauthorized access")
	}
	if s.stopping.Load() {
		return scanned{}, refuse(http.StatusServiceUnavailable, "stopping: write again shortly")
	}
	if s.backlog.Full() {
		re := refuse(http.StatusServiceUnavailable, "backlog at its disk quota (max_backlog_bytes, min_free_bytes): the pipeline is behind; write again later")
		re.retry = s.retryAfter(r.ContentLength)
		return scanned{}, re
	}
	source, prec, err := a.target(r.URL.Query())
	if err != nil {
		return scanned{}, err
	}
	var charge int64
	defer func() { s.stats.InFlightBytes.Add(-charge) }()
	body, err := s.readBody(w, r, &charge)
	recv := s.cfg.Wall.Now().UnixNano()
	var sc scanned
	if err == nil {
		sc, err = s.scan(source, prec, recv, body, &charge)
	}
	if err == nil && sc.valid == 0 && sc.bad > 0 {
		s.rejectBad(source, prec, recv, body)
		err = refuse(http.StatusBadRequest, "no valid line: %d bad lines, the first %s", sc.bad, position(sc.listed[0].err))
	}
	if err != nil || sc.valid == 0 {
		return sc, err
	}
	wr := &write{source: source, prec: prec, recv: recv, body: body}
	rec := s.buffer()
	rec.Write(spool.AppendRecord(rec.AvailableBuffer(), spool.Record{Source: source, Received: recv, Payload: body}))
	s.orderMu.Lock()
	wr.seq, err = s.spool.Append(rec.Bytes()) // copies
	if err == nil {
		s.order = append(s.order, wr)
	}
	s.orderMu.Unlock()
	s.buffers.Put(rec)
	if err == nil {
		err = s.spool.Sync()
	}
	if err != nil {
		if !errors.Is(err, spool.ErrClosed) {
			s.fail(err)
		}
		// Nothing written: the client writes the body again, and its bad
		// lines are reported then.
		return scanned{}, refuse(http.StatusServiceUnavailable, "spool: %v", err)
	}
	if sc.bad > 0 {
		s.rejectBad(source, prec, recv, body)
	}
	s.names.add(a, r.URL.Query().Get(a.destKey()))
	s.stats.Accepted.Add(1)
	s.stats.Bytes.Add(uint64(sc.size))
	s.handOn()
	return sc, nil
}

// maxRetryAfter bounds the wait a 503 at the disk quota asks: a stalled
// pipeline may resume at any moment.
const maxRetryAfter = time.Minute

// retryAfter estimates when the backlog, at its disk quota, has room for
// a body of n bytes (unknown when not positive: one body of the
// backlog's average size): once the pipeline took as many bytes from it,
// at its drain rate. It is at least Config.RetryAfter, which it is while
// the pipeline takes nothing, and at most maxRetryAfter.
func (s *Source) retryAfter(n int64) time.Duration {
	st := s.backlog.Stats()
	if st.DrainRate <= 0 || st.Records == 0 {
		return s.cfg.RetryAfter
	}
	avg := float64(st.Bytes) / float64(st.Records)
	bodies := max(float64(n)/avg, 1)
	wait := time.Duration(bodies / st.DrainRate * float64(time.Second))
	return min(max(wait, s.cfg.RetryAfter), maxRetryAfter)
}

// scan makes the first pass over a body as received: it counts the valid
// and the bad lines, keeping the first maxListed bad ones for the
// answer. A gzip body's decompressed bytes are taken from the in-flight
// bound into *charge as they are decoded, and refused 413 past
// Config.MaxBodySize.
func (s *Source) scan(source string, prec particle.Precision, recv int64, body []byte, charge *int64) (scanned, error) {
	sc := scanned{size: int64(len(body))}
	var m *meter
	inflated := func(r io.Reader) io.Reader {
		m = &meter{s: s, r: r, limit: s.cfg.MaxBodySize, charge: charge, what: " after decompression"}
		return m
	}
	err := s.each(source, prec, recv, body, inflated, func(_ particle.Particle, bad *particle.DecodeError, raw []byte) bool {
		if bad == nil {
			sc.valid++
			return true
		}
		sc.bad++
		if len(sc.listed) < maxListed {
			sc.listed = append(sc.listed, badLine{err: bad, raw: bytes.Clone(raw)})
		}
		return true
	})
	if m != nil {
		sc.size = m.n
	}
	if err == nil {
		return sc, nil
	}
	if re, ok := errors.AsType[*requestError](err); ok {
		return scanned{}, re
	}
	return scanned{}, refuse(http.StatusBadRequest, "gzip: %v", err)
}

// rejectBad sends each bad line of a scanned body to the dead-letter
// sink, counted as invalid.
func (s *Source) rejectBad(source string, prec particle.Precision, recv int64, body []byte) {
	// The scan read the same bytes without a read error.
	_ = s.each(source, prec, recv, body, nil, func(_ particle.Particle, bad *particle.DecodeError, raw []byte) bool {
		if bad != nil {
			s.stats.Invalid.Add(1)
			s.out.Reject(bad, bytes.Clone(raw))
		}
		return true
	})
}

// refused answers a write refused, counting it by status; bad are the
// body's bad lines, when it had no valid one.
func (s *Source) refused(w http.ResponseWriter, a api, err error, bad []badLine) {
	re, ok := errors.AsType[*requestError](err)
	if !ok {
		re = &requestError{status: http.StatusInternalServerError, msg: err.Error()}
	}
	switch re.status {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType:
		s.stats.BadRequests.Add(1)
	case http.StatusUnauthorized:
		s.stats.Unauthorized.Add(1)
	case http.StatusRequestEntityTooLarge:
		s.stats.TooLarge.Add(1)
	case http.StatusServiceUnavailable:
		s.stats.Unavailable.Add(1)
		wait := s.cfg.RetryAfter
		if re.retry > 0 {
			wait = re.retry
		}
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(wait.Round(time.Second).Seconds()))))
	}
	a.respond(w, re.status, re.msg, bad)
}

// buffer returns an empty buffer from the pool.
func (s *Source) buffer() *bytes.Buffer {
	if b, ok := s.buffers.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

// authorized reports whether r carries the configured token.
func (s *Source) authorized(r *http.Request, a api) bool {
	if s.cfg.Token == "" {
		return true
	}
	auth := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(auth, "Token "); ok {
		return s.isToken(tok)
	}
	if tok, ok := strings.CutPrefix(auth, "Bearer "); ok {
		return s.isToken(tok)
	}
	if a == apiV1 {
		if _, pass, ok := r.BasicAuth(); ok {
			return s.isToken(pass)
		}
		return s.isToken(r.URL.Query().Get("p"))
	}
	return false
}

func (s *Source) isToken(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}

// target returns the name of a write's input (its path and the query
// parameters that say where and how, without credentials) and the
// precision of its timestamps.
func (a api) target(q url.Values) (string, particle.Precision, error) {
	path, dest := "/api/v2/write", []string{a.destKey(), "org", "orgID"}
	if a == apiV1 {
		path, dest = "/write", []string{a.destKey(), "rp"}
	}
	if q.Get(dest[0]) == "" {
		return "", 0, refuse(http.StatusBadRequest, "missing %s", dest[0])
	}
	prec := particle.Nanosecond
	if p := q.Get("precision"); p != "" {
		var err error
		if prec, err = particle.ParsePrecision(p); err != nil {
			return "", 0, refuse(http.StatusBadRequest, "precision %q: want ns, us, ms or s (n, u for the 1.x API)", p)
		}
	}
	kept := url.Values{}
	for _, k := range append(dest, "precision") {
		if v := q.Get(k); v != "" {
			kept.Set(k, v)
		}
	}
	return path + "?" + kept.Encode(), prec, nil
}

// destKey is the query parameter naming where a write goes: the bucket
// or the database.
func (a api) destKey() string {
	if a == apiV1 {
		return "db"
	}
	return "bucket"
}

// readBody reads r's body as sent, plain or gzip, within
// Config.MaxBodySize, taking its bytes from the in-flight bound into
// *charge as they arrive.
func (s *Source) readBody(w http.ResponseWriter, r *http.Request, charge *int64) ([]byte, error) {
	limit := s.cfg.MaxBodySize
	if r.ContentLength > limit {
		return nil, refuse(http.StatusRequestEntityTooLarge, "body of %d bytes, more than the limit of %d bytes (max_body_size)", r.ContentLength, limit)
	}
	enc := r.Header.Get("Content-Encoding")
	switch enc {
	case "", "identity", "gzip":
	default:
		return nil, refuse(http.StatusUnsupportedMediaType, "content encoding %q: want gzip or identity", enc)
	}
	buf := s.buffer()
	defer s.buffers.Put(buf)
	_, err := buf.ReadFrom(&meter{s: s, r: http.MaxBytesReader(w, r.Body, limit), limit: limit, charge: charge})
	if err != nil {
		if re, ok := errors.AsType[*requestError](err); ok {
			return nil, re
		}
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, refuse(http.StatusRequestEntityTooLarge, "body larger than the limit of %d bytes (max_body_size)", limit)
		}
		return nil, refuse(http.StatusBadRequest, "reading the body: %v", err)
	}
	gz := isGzip(buf.Bytes())
	switch {
	case enc == "gzip" && !gz:
		return nil, refuse(http.StatusBadRequest, "gzip: %v", gzip.ErrHeader)
	case enc != "gzip" && gz:
		return nil, refuse(http.StatusBadRequest, "a gzip body without Content-Encoding: gzip")
	}
	return bytes.Clone(buf.Bytes()), nil
}

// meter reads a body's bytes, taking each chunk from the in-flight bound
// into *charge: past limit bytes it fails with 413, and with 503 when the
// bound is reached (by the bodies being received, not by the backlog).
type meter struct {
	s      *Source
	r      io.Reader
	n      int64 // bytes read
	limit  int64
	charge *int64
	what   string // said of the limit in a 413: the body is measured so
}

func (m *meter) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.n += int64(n)
	if m.n > m.limit {
		return n, refuse(http.StatusRequestEntityTooLarge, "body larger than the limit of %d bytes (max_body_size)%s", m.limit, m.what)
	}
	if n > 0 && !m.s.admit(int64(n), *m.charge) {
		return n, refuse(http.StatusServiceUnavailable, "too many bodies being received: %d bytes in flight (max_in_flight_bytes)", m.s.stats.InFlightBytes.Load())
	}
	*m.charge += int64(n)
	return n, err
}

// lineError is one bad line in an error body.
type lineError struct {
	Line    int    `json:"line"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// respond writes an error body in the shape of the API's InfluxDB: 2.x's
// {"code", "message", "line"} or 1.x's {"error"}, with "errors" listing
// the bad lines (up to maxListed) with their positions.
func (a api) respond(w http.ResponseWriter, status int, msg string, bad []badLine) {
	var lines []lineError
	for _, l := range bad[:min(len(bad), maxListed)] {
		lines = append(lines, lineError{Line: l.err.Line, Column: l.err.Column, Message: l.err.Err.Error()})
	}
	if a == apiV1 {
		writeJSON(w, status, struct {
			Error  string      `json:"error"`
			Errors []lineError `json:"errors,omitempty"`
		}{msg, lines})
		return
	}
	v := struct {
		Code    string      `json:"code"`
		Message string      `json:"message"`
		Line    int         `json:"line,omitempty"`
		Errors  []lineError `json:"errors,omitempty"`
	}{Code: errorCode(status), Message: msg, Errors: lines}
	if len(lines) > 0 {
		v.Line = lines[0].Line
	}
	writeJSON(w, status, v)
}

// errorCode is InfluxDB 2's error code for an HTTP status.
func errorCode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusRequestEntityTooLarge:
		return "request too large"
	case http.StatusServiceUnavailable:
		return "unavailable"
	case http.StatusMethodNotAllowed:
		return "method not allowed"
	case http.StatusNotFound:
		return "not found"
	case http.StatusInternalServerError:
		return "internal error"
	}
	return "invalid"
}

// position describes a bad line: "at line L:C: cause".
func position(e *particle.DecodeError) string {
	if e.Column > 0 {
		return fmt.Sprintf("at line %d:%d: %v", e.Line, e.Column, e.Err)
	}
	return fmt.Sprintf("at line %d: %v", e.Line, e.Err)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // an error is the client's
}
