package file

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/sensorstorm/sensorstorm/particle"
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
type DeadLetterWriter struct {
	mu   sync.Mutex
	w    io.Writer
	line []byte
	err  error
}

var _ topology.DeadLetterSink = (*DeadLetterWriter)(nil)

// NewDeadLetterWriter returns a DeadLetterWriter writing to w.
func NewDeadLetterWriter(w io.Writer) *DeadLetterWriter {
	return &DeadLetterWriter{w: w}
}

// DeadLetter implements topology.DeadLetterSink. A write error is kept
// for Err; later dead letters are still attempted.
func (d *DeadLetterWriter) DeadLetter(_ context.Context, l topology.DeadLetter) {
	rec := NewDeadLetterRecord(l)
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := json.Marshal(rec)
	if err == nil {
		d.line = append(append(d.line[:0], b...), '\n')
		_, err = d.w.Write(d.line)
	}
	if err != nil && d.err == nil {
		d.err = err
	}
}

// Err returns the first error writing a dead letter, or nil.
func (d *DeadLetterWriter) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
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
