package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Limits of what the command logs.
const (
	// logBurst is how many records of one kind (level and message) are
	// logged before they are only counted.
	logBurst = 5
	// maxLogValue is how many bytes of a string attribute, such as an
	// error quoting a payload, a log line shows.
	maxLogValue = 200
)

// logFlags are the logging flags every command has.
type logFlags struct {
	level  slog.Level
	format string
}

func (l *logFlags) register(fs *flag.FlagSet, level slog.Level) {
	fs.TextVar(&l.level, "log-level", level, "log `LEVEL`: debug, info, warn or error")
	fs.Func("log-format", "log `FORMAT`: text or json (default text)", func(s string) error {
		if s != "text" && s != "json" {
			return fmt.Errorf("want text or json, got %q", s)
		}
		l.format = s
		return nil
	})
}

// logger returns a logger writing to w at the chosen level and format,
// through a limitHandler.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, *limitHandler) {
	opts := &slog.HandlerOptions{Level: l.level, ReplaceAttr: durationString}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if l.format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	lh := newLimitHandler(h)
	return slog.New(lh), lh
}

// durationString writes durations as text ("1.5s"), as the text format
// does, rather than as JSON's bare nanoseconds.
func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// reporter writes the lines a command ends with, its summary and the
// like, whatever the log level: "msg: key=value ..." as text, or with
// --log-format json a JSON record like the logs', so that the output is
// JSON to its last line.
type reporter struct {
	w    io.Writer
	json *slog.Logger // nil for text
}

// reporter returns the reporter writing to w in the chosen format.
func (l *logFlags) reporter(w io.Writer) reporter {
	r := reporter{w: w}
	if l.format == "json" {
		r.json = slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: durationString}))
	}
	return r
}

// line writes msg with attrs.
func (r reporter) line(msg string, attrs ...slog.Attr) {
	if r.json != nil {
		r.json.LogAttrs(context.Background(), slog.LevelInfo, msg, attrs...)
		return
	}
	var b strings.Builder
	b.WriteString(msg + ":")
	for _, a := range attrs {
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value)
	}
	fmt.Fprintln(r.w, b.String())
}

// prose writes a sentence: as it is in text, as a record's message in
// JSON.
func (r reporter) prose(msg string) {
	if r.json != nil {
		r.json.Info(msg)
		return
	}
	fmt.Fprintln(r.w, msg)
}

// fail writes err: "sensorstorm: err" as text, an error record in JSON.
func (r reporter) fail(err error) {
	if r.json != nil {
		r.json.Error(err.Error())
		return
	}
	fmt.Fprintln(r.w, "sensorstorm:", err)
}

// limitHandler keeps bad input from flooding the log: of the records
// with the same level and message it passes the first logBurst, then one
// at each power of ten with the attribute repeated=N, and Summarize logs
// the final counts. It cuts string attributes longer than maxLogValue
// bytes, so that an error quoting a 10 MB payload logs a short prefix.
// It is safe for concurrent use; handlers derived by WithAttrs and
// WithGroup share the counts.
type limitHandler struct {
	next  slog.Handler
	state *limitState
}

type limitState struct {
	mu     sync.Mutex
	counts map[limitKey]int
	order  []limitKey
}

type limitKey struct {
	level slog.Level
	msg   string
}

func newLimitHandler(next slog.Handler) *limitHandler {
	return &limitHandler{next: next, state: &limitState{counts: map[limitKey]int{}}}
}

var _ slog.Handler = (*limitHandler)(nil)

// Enabled implements slog.Handler.
func (h *limitHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (h *limitHandler) Handle(ctx context.Context, r slog.Record) error {
	n := h.state.count(limitKey{r.Level, r.Message})
	if n > logBurst && !powerOfTen(n) {
		return nil
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(shorten(a))
		return true
	})
	if n > logBurst {
		out.AddAttrs(slog.Int("repeated", n))
	}
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h *limitHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	short := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		short[i] = shorten(a)
	}
	return &limitHandler{next: h.next.WithAttrs(short), state: h.state}
}

// WithGroup implements slog.Handler.
func (h *limitHandler) WithGroup(name string) slog.Handler {
	return &limitHandler{next: h.next.WithGroup(name), state: h.state}
}

// Summarize logs, for each kind of record that was held back, how many
// there were in all. A command calls it once, at its end.
func (h *limitHandler) Summarize(ctx context.Context) {
	s := h.state
	s.mu.Lock()
	var held []slog.Record
	for _, k := range s.order {
		if n := s.counts[k]; n > logBurst && !powerOfTen(n) {
			r := slog.NewRecord(time.Now(), k.level, k.msg, 0)
			r.AddAttrs(slog.Int("repeated", n), slog.Bool("final", true))
			held = append(held, r)
		}
	}
	s.mu.Unlock()
	for _, r := range held {
		if h.next.Enabled(ctx, r.Level) {
			_ = h.next.Handle(ctx, r)
		}
	}
}

func (s *limitState) count(k limitKey) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.counts[k] + 1
	if n == 1 {
		s.order = append(s.order, k)
	}
	s.counts[k] = n
	return n
}

func powerOfTen(n int) bool {
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}

// shorten cuts a long string or error attribute to maxLogValue bytes.
func shorten(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	var s string
	switch v.Kind() {
	case slog.KindString:
		s = v.String()
	case slog.KindAny:
		err, ok := v.Any().(error)
		if !ok {
			return a
		}
		s = err.Error()
	case slog.KindGroup:
		g := v.Group()
		short := make([]any, len(g))
		for i, ga := range g {
			short[i] = shorten(ga)
		}
		return slog.Group(a.Key, short...)
	default:
		return a
	}
	if len(s) <= maxLogValue {
		return a
	}
	cut := maxLogValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return slog.String(a.Key, fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s)))
}
