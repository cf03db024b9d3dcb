package particle

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// Encoder writes particles as InfluxDB line protocol into a buffer, one
// line each, with measurement, keys and values escaped as line protocol
// requires.
//
// The zero Encoder is ready to use and writes nanosecond timestamps. A
// particle that cannot be encoded leaves no trace in the buffer; Err keeps
// the first such error until Reset.
//
// An Encoder is not safe for concurrent use.
type Encoder struct {
	lp   lineprotocol.Encoder
	prec Precision
	tags []Tag
	vals []lineprotocol.Value
	err  error
}

// SetPrecision sets the unit of the timestamps written from now on.
// Timestamps are truncated towards zero to it.
func (e *Encoder) SetPrecision(p Precision) {
	e.prec = p
	if p.valid() {
		e.lp.SetPrecision(lineprotocol.Precision(p))
	}
}

// Bytes returns the lines encoded since the last Reset. The slice is valid
// until the next call of Encode or Reset.
func (e *Encoder) Bytes() []byte { return e.lp.Bytes() }

// Reset empties the buffer, keeping its memory, and clears Err.
func (e *Encoder) Reset() {
	e.lp.Reset()
	e.err = nil
}

// Err returns the first error of Encode since the last Reset.
func (e *Encoder) Err() error { return e.err }

// Encode appends p as one line. It returns ErrMetaParticle for a meta
// particle, ErrNoFields for a particle without fields, and an error naming
// the culprit for a name or value line protocol cannot represent: an empty
// or invalid UTF-8 name or tag value, one with control characters or a
// trailing backslash, a measurement starting with '#', duplicate tag keys,
// a non-finite float, an invalid Value. Tags need not be sorted.
func (e *Encoder) Encode(p *Particle) error {
	if err := e.encode(p); err != nil {
		if e.err == nil {
			e.err = err
		}
		return err
	}
	return nil
}

func (e *Encoder) encode(p *Particle) error {
	switch {
	case p.Meta != nil:
		return ErrMetaParticle
	case len(p.Fields) == 0:
		return ErrNoFields
	case !e.prec.valid():
		return fmt.Errorf("particle: encode: %w %d", ErrUnknownPrecision, e.prec)
	case strings.HasPrefix(p.Measurement, "#"):
		return fmt.Errorf("particle: encode: measurement %q starts with '#', which would make a comment line", p.Measurement)
	}
	tags := p.Tags
	if !slices.IsSortedFunc(tags, compareTags) {
		e.tags = append(e.tags[:0], tags...)
		slices.SortFunc(e.tags, compareTags)
		tags = e.tags
	}

	// Values are converted first, as a value line protocol cannot hold has
	// no lineprotocol.Value to hand to AddField.
	e.vals = e.vals[:0]
	for _, f := range p.Fields {
		v, err := lineValue(f.Value)
		if err != nil {
			return fmt.Errorf("particle: encode: field %q: %w", f.Key, err)
		}
		e.vals = append(e.vals, v)
	}

	// Restarting lineprotocol.Encoder on its own buffer clears its first
	// error and line count, so that an error is this particle's alone. On
	// error it drops the partial line itself.
	e.lp.SetBuffer(e.lp.Bytes())
	e.lp.StartLine(p.Measurement)
	for _, t := range tags {
		e.lp.AddTag(t.Key, t.Value)
	}
	for i, f := range p.Fields {
		e.lp.AddField(f.Key, e.vals[i])
	}
	e.lp.EndLine(time.Unix(0, p.Time))
	if err := e.lp.Err(); err != nil {
		return fmt.Errorf("particle: encode: %w", err)
	}
	return nil
}

func lineValue(v Value) (lineprotocol.Value, error) {
	switch v.Kind() {
	case KindFloat:
		if lv, ok := lineprotocol.FloatValue(v.FloatValue()); ok {
			return lv, nil
		}
		return lineprotocol.Value{}, fmt.Errorf("non-finite float %v", v.FloatValue())
	case KindInt:
		return lineprotocol.IntValue(v.IntValue()), nil
	case KindUint:
		return lineprotocol.UintValue(v.UintValue()), nil
	case KindBool:
		return lineprotocol.BoolValue(v.BoolValue()), nil
	case KindString:
		s := v.StringValue()
		// NewValueFromBytes neither copies nor modifies the bytes, unlike
		// StringValue which copies them.
		return lineprotocol.NewValueFromBytes(lineprotocol.String, unsafe.Slice(unsafe.StringData(s), len(s)))
	}
	return lineprotocol.Value{}, errors.New("invalid value")
}

// AppendLineProtocol appends p as one line of line protocol to dst, with
// timestamps in the given precision. On error it returns dst unchanged.
// It is a convenience for one-off lines; an Encoder reuses its memory.
func AppendLineProtocol(dst []byte, p *Particle, prec Precision) ([]byte, error) {
	var e Encoder
	e.lp.SetBuffer(dst)
	e.SetPrecision(prec)
	if err := e.Encode(p); err != nil {
		return dst, err
	}
	return e.Bytes(), nil
}
