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

// handler routes InfluxDB's write, ping and health endpoints.
func (s *Source) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v2/write", func(w http.ResponseWriter, r *http.Request) { s.write(w, r, apiV2) })
	mux.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) { s.write(w, r, apiV1) })
	mux.HandleFunc("/ping", s.ping)
	mux.HandleFunc("/health", s.health)
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
}

func (e *requestError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) *requestError {
	return &requestError{status: status, msg: fmt.Sprintf(format, args...)}
}

// write handles a write request: the body is decoded, its valid lines
// made durable in the spool, and only then is the request answered; the
// particles are emitted after the answer, so that a pipeline under
// backpressure holds the next request rather than this answer.
func (s *Source) write(w http.ResponseWriter, r *http.Request, a api) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		a.respond(w, http.StatusMethodNotAllowed, "method not allowed: write with POST", nil)
		return
	}
	s.stats.Requests.Add(1)
	buf := s.buffer()
	defer s.buffers.Put(buf)
	wr, b, err := s.accept(w, r, a, buf)
	for _, l := range b.bad {
		s.stats.Invalid.Add(1)
		s.out.Reject(l.err, l.raw)
	}
	switch {
	case err != nil:
		s.refused(w, a, err, b.bad)
		return
	case len(b.bad) == 0:
		w.WriteHeader(http.StatusNoContent)
	default:
		a.respond(w, http.StatusBadRequest, fmt.Sprintf("partial write error (%d written): %d bad lines, the first %s",
			len(b.particles), len(b.bad), position(b.bad[0].err)), b.bad)
	}
	if wr == nil {
		return
	}
	_ = http.NewResponseController(w).Flush() // the answer is due now; an error is the client's
	s.emit(wr, b.particles)
}

// accept checks a write request, reads and decodes its body into buf and
// spools it. It returns the spooled write (nil when there was nothing to
// spool) and the body, or a *requestError.
func (s *Source) accept(w http.ResponseWriter, r *http.Request, a api, buf *bytes.Buffer) (*write, body, error) {
	if !s.authorized(r, a) {
		return nil, body{}, refuse(http.StatusUnauthorized, "unauthorized access")
	}
	if s.stopping.Load() {
		return nil, body{}, refuse(http.StatusServiceUnavailable, "stopping: write again shortly")
	}
	source, prec, err := a.target(r.URL.Query())
	if err != nil {
		return nil, body{}, err
	}
	if err := s.readBody(w, r, buf); err != nil {
		return nil, body{}, err
	}
	size := int64(buf.Len())
	if !s.admit(size) {
		return nil, body{}, refuse(http.StatusServiceUnavailable, "spool full: %d bytes in flight", s.stats.InFlightBytes.Load())
	}
	recv := s.cfg.Wall.Now().UnixNano()
	b, err := s.decode(source, prec, recv, buf.Bytes())
	if err == nil && len(b.particles) == 0 && len(b.bad) > 0 {
		err = refuse(http.StatusBadRequest, "no valid line: %d bad lines, the first %s", len(b.bad), position(b.bad[0].err))
	}
	if err != nil || len(b.particles) == 0 {
		s.stats.InFlightBytes.Add(-size)
		return nil, b, err
	}
	rec := s.buffer()
	rec.Write(spool.AppendRecord(rec.AvailableBuffer(), spool.Record{Source: source, Received: recv, Payload: buf.Bytes()}))
	seq, err := s.spool.Append(rec.Bytes()) // copies
	s.buffers.Put(rec)
	if err == nil {
		err = s.spool.Sync()
	}
	if err != nil {
		s.stats.InFlightBytes.Add(-size)
		if !errors.Is(err, spool.ErrClosed) {
			s.fail(err)
		}
		// Nothing written: the client writes the body again, and its bad
		// lines are reported then.
		return nil, body{}, refuse(http.StatusServiceUnavailable, "spool: %v", err)
	}
	s.stats.Accepted.Add(1)
	s.stats.Bytes.Add(uint64(size))
	return &write{seq: seq, source: source, prec: prec, recv: recv, body: bytes.Clone(buf.Bytes())}, b, nil
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
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(s.cfg.RetryAfter.Round(1e9).Seconds()))))
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
	path, dest := "/api/v2/write", []string{"bucket", "org", "orgID"}
	if a == apiV1 {
		path, dest = "/write", []string{"db", "rp"}
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

// readBody reads r's body into buf, decompressing gzip, within
// Config.MaxBodySize.
func (s *Source) readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) error {
	limit := s.cfg.MaxBodySize
	if r.ContentLength > limit {
		return refuse(http.StatusRequestEntityTooLarge, "body of %d bytes, more than %d", r.ContentLength, limit)
	}
	var rd io.Reader = http.MaxBytesReader(w, r.Body, limit)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return refuse(http.StatusBadRequest, "gzip: %v", err)
		}
		defer zr.Close()
		rd = io.LimitReader(zr, limit+1)
	default:
		return refuse(http.StatusUnsupportedMediaType, "content encoding %q: want gzip or identity", enc)
	}
	_, err := buf.ReadFrom(rd)
	switch {
	case errors.As(err, new(*http.MaxBytesError)):
		return refuse(http.StatusRequestEntityTooLarge, "body larger than %d bytes", limit)
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.Is(err, io.ErrUnexpectedEOF):
		return refuse(http.StatusBadRequest, "gzip: %v", err)
	case err != nil:
		return refuse(http.StatusBadRequest, "reading the body: %v", err)
	case int64(buf.Len()) > limit:
		return refuse(http.StatusRequestEntityTooLarge, "body larger than %d bytes", limit)
	}
	return nil
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
