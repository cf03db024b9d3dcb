package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// DeadLetterRecord is one line of a dead-letter file, in JSON.
type DeadLetterRecord struct {
	// Component is the source or bolt that gave up, Instance its instance.
	Component string `json:"component"`
	Instance  int    `json:"instance"`
	// Reason says why: "invalid", "late", "timeout", ...
	Reason string `json:"reason"`
	// Source names the input of bad input (a file path, an MQTT topic),
	// Line and Column its position in it; they are left out when unknown.
	Source string `json:"source,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Error is the error that caused it, if any.
	Error string `json:"error,omitempty"`
	// Payload is the input, byte for byte, when it is valid UTF-8: the raw
	// bytes of bad input, or the particle as a line of line protocol.
	// PayloadBase64 holds it instead, in standard base64, when it is not.
	Payload       string `json:"payload,omitempty"`
	PayloadBase64 []byte `json:"payload_base64,omitempty"`
}

// DeadLetterWriter is a topology.DeadLetterSink that writes each dead
// letter as a line of JSON (a DeadLetterRecord) to a writer, such as a
// file opened for appending. Every record is written at once, not
// buffered: dead letters are rare, and those of a process that crashes
// must not be lost. It is safe for concurrent use.
//
// A writer that fails (a full disk) is a failing destination like any
// other: the dead letter is written again after a backoff, the rest of its
// line where a write was cut short, while the caller waits, which holds
// its part of the pipeline back. Once the writer has failed for
// DeadLetterConfig.Retry.GiveUpAfter, the error is kept (Err),
// DeadLetterConfig.OnGiveUp is called, and later dead letters are counted
// as lost (Lost) without being tried.
type DeadLetterWriter struct {
	cfg  DeadLetterConfig
	mu   sync.Mutex
	w    io.Writer
	line []byte
	err  error
	lost uint64
}

// DeadLetterConfig configures a DeadLetterWriter. The zero
// DeadLetterConfig is valid.
type DeadLetterConfig struct {
	// Retry bounds the backoff between attempts to write a dead letter
	// and how long the writer may fail before it is given up on. Its zero
	// fields default to topology's DefaultRetryInitialInterval,
	// DefaultRetryMaxInterval and DefaultGiveUpAfter.
	Retry topology.DestinationConfig
	// OnGiveUp is called once, with the error, when the writer is given
	// up on, for the caller to stop the run. Defaults to nothing.
	OnGiveUp func(error)
	// Wall is the clock the backoff waits on. Defaults to the system's.
	Wall streamclock.Wall
	// Logger receives a failing writer's errors. Defaults to discarding
	// them.
	Logger *slog.Logger
}

func (c *DeadLetterConfig) setDefaults() {
	if c.Retry.InitialInterval <= 0 {
		c.Retry.InitialInterval = topology.DefaultRetryInitialInterval
	}
	if c.Retry.MaxInterval <= 0 {
		c.Retry.MaxInterval = topology.DefaultRetryMaxInterval
	}
	if c.Retry.GiveUpAfter <= 0 {
		c.Retry.GiveUpAfter = topology.DefaultGiveUpAfter
	}
	if c.OnGiveUp == nil {
		c.OnGiveUp = func(error) {}
	}
	if c.Wall == nil {
		c.Wall = streamclock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

var _ topology.DeadLetterSink = (*DeadLetterWriter)(nil)

// NewDeadLetterWriter returns a DeadLetterWriter writing to w.
func NewDeadLetterWriter(w io.Writer, cfg DeadLetterConfig) *DeadLetterWriter {
	cfg.setDefaults()
	return &DeadLetterWriter{cfg: cfg, w: w}
}

// DeadLetter implements topology.DeadLetterSink. It returns once the dead
// letter is written, the writer was given up on, or ctx ended.
func (d *DeadLetterWriter) DeadLetter(ctx context.Context, l topology.DeadLetter) {
	rec := NewDeadLetterRecord(l)
	b, err := json.Marshal(rec)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case err != nil:
		d.fail(err)
		return
	case d.err != nil:
		d.lost++
		return
	}
	d.line = append(append(d.line[:0], b...), '\n')
	d.write(ctx)
}

// write writes d.line, again after a backoff while the writer fails, until
// it gives up. d.mu is held.
func (d *DeadLetterWriter) write(ctx context.Context) {
	rest := d.line
	wait := d.cfg.Retry.InitialInterval
	start := d.cfg.Wall.Now()
	for attempt := 1; ; attempt++ {
		n, err := d.w.Write(rest)
		if err == nil {
			if attempt > 1 {
				d.cfg.Logger.Info("dead letters: writing again", "after", d.cfg.Wall.Now().Sub(start).Round(time.Millisecond))
			}
			return
		}
		rest = rest[n:]
		failed := d.cfg.Wall.Now().Sub(start)
		if failed >= d.cfg.Retry.GiveUpAfter {
			d.fail(fmt.Errorf("dead letters: writing failed for %v, given up: %w", failed.Round(time.Millisecond), err))
			return
		}
		if attempt == 1 {
			d.cfg.Logger.Error("dead letters: writing failed, retrying; the pipeline waits meanwhile", "err", err)
		}
		tick, stop := d.cfg.Wall.NewTicker(wait)
		select {
		case <-tick:
		case <-ctx.Done():
			stop()
			d.fail(fmt.Errorf("dead letters: stopped while writing failed: %w", err))
			return
		}
		stop()
		wait = min(2*wait, d.cfg.Retry.MaxInterval)
	}
}

// fail keeps err, counts the dead letter lost and gives the writer up.
// d.mu is held.
func (d *DeadLetterWriter) fail(err error) {
	d.lost++
	if d.err == nil {
		d.err = err
		d.cfg.Logger.Error("dead letters: given up", "err", err)
		d.cfg.OnGiveUp(err)
	}
}

// Err returns the error the writer was given up on, or nil.
func (d *DeadLetterWriter) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Lost returns how many dead letters were not written.
func (d *DeadLetterWriter) Lost() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lost
}

// NewDeadLetterRecord returns the record of l.
func NewDeadLetterRecord(l topology.DeadLetter) DeadLetterRecord {
	rec := DeadLetterRecord{Component: l.Component, Instance: l.Instance, Reason: l.Reason}
	if l.Err != nil {
		rec.Error = l.Err.Error()
		var de *particle.DecodeError
		if errors.As(l.Err, &de) {
			rec.Source, rec.Line, rec.Column = de.Source, de.Line, de.Column
		}
	}
	payload := l.Raw
	if payload == nil && l.Particle != nil && l.Particle.Meta == nil {
		// A particle that cannot be encoded has no payload to show;
		// the error says what it was.
		payload, _ = particle.AppendLineProtocol(nil, l.Particle, particle.Nanosecond)
		if n := len(payload); n > 0 && payload[n-1] == '\n' {
			payload = payload[:n-1]
		}
	}
	if utf8.Valid(payload) {
		rec.Payload = string(payload)
	} else {
		rec.PayloadBase64 = payload
	}
	return rec
}
