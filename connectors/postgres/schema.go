package postgres

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/sensorstorm/sensorstorm/particle"
)

// maxIdentifier is the longest PostgreSQL identifier in bytes
// (NAMEDATALEN-1); a longer one would be cut silently, and two keys could
// name one column.
const maxIdentifier = 63

// The columns every table has. time_ns keys the rows with the event
// time's nanoseconds, which time (timestamptz: microseconds) would round.
// epoch is the checkpoint epoch a row was inserted in, NULL without
// checkpoints (see Sink.Snapshot).
const (
	colTime        = "time"
	colTimeNS      = "time_ns"
	colSeries      = "series"
	colMeasurement = "measurement"
	colEpoch       = "epoch"
)

// fixedColumns are the columns every row fills, in the order a batch
// gives them. A row merged into one of the table keeps the table's
// values of them: epoch stays the epoch the row was inserted in.
var fixedColumns = []string{colTime, colTimeNS, colSeries, colMeasurement, colEpoch}

// colType is the type of a column, as format_type names it.
type colType string

// The column types the sink writes; a column of another type takes no
// particle.
const (
	typeText   colType = "text"
	typeFloat  colType = "double precision"
	typeBigint colType = "bigint"
	typeBool   colType = "boolean"
)

// fieldType returns the column type for a field value.
func fieldType(v particle.Value) colType {
	switch v.Kind() {
	case particle.KindFloat:
		return typeFloat
	case particle.KindInt, particle.KindUint:
		return typeBigint
	case particle.KindBool:
		return typeBool
	}
	return typeText
}

// column is a named column of a type.
type column struct {
	name string
	typ  colType
}

// columns is what the sink knows of the table's columns: their types, and
// which of them exist in the database rather than only in a batch not
// yet written.
type columns struct {
	types   map[string]colType
	created map[string]bool
}

// fit checks that p can be a row of the table and, only then, gives a
// column to each of its keys that has none yet, typed after p's value. The
// error wraps ErrColumn.
func (c *columns) fit(p *particle.Particle) error {
	var added []column
	for _, t := range p.Tags {
		if err := c.claim(p, &added, t.Key, typeText); err != nil {
			return err
		}
	}
	for i, f := range p.Fields {
		for _, g := range p.Fields[:i] {
			if g.Key == f.Key {
				return fmt.Errorf("%w: field %q appears twice", ErrColumn, f.Key)
			}
		}
		if _, ok := p.Tag(f.Key); ok {
			return fmt.Errorf("%w: %q is both a tag and a field", ErrColumn, f.Key)
		}
		if err := c.claim(p, &added, f.Key, fieldType(f.Value)); err != nil {
			return err
		}
	}
	if err := fitValues(p); err != nil {
		return err
	}
	for _, a := range added {
		c.types[a.name] = a.typ
	}
	return nil
}

// fitValues checks what fit checks of p's values alone, for a particle
// whose columns are known to fit: those of one that did (sameColumns).
func fitValues(p *particle.Particle) error {
	if err := text("measurement", "", p.Measurement); err != nil {
		return err
	}
	for _, t := range p.Tags {
		if err := text("tag ", t.Key, t.Value); err != nil {
			return err
		}
	}
	for _, f := range p.Fields {
		switch f.Value.Kind() {
		case particle.KindUint:
			if f.Value.UintValue() > math.MaxInt64 {
				return fmt.Errorf("%w: field %q: %d overflows bigint", ErrColumn, f.Key, f.Value.UintValue())
			}
		case particle.KindString:
			if err := text("field ", f.Key, f.Value.StringValue()); err != nil {
				return err
			}
		case particle.KindInvalid:
			return fmt.Errorf("%w: field %q has no value", ErrColumn, f.Key)
		}
	}
	return nil
}

// sameColumns reports whether a and b have the same tag and field keys in
// the same order, with values of the same column types: then the columns
// of one fit the table when those of the other do, and their values go to
// the same positions of a row.
func sameColumns(a, b *particle.Particle) bool {
	if len(a.Tags) != len(b.Tags) || len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Tags {
		if a.Tags[i].Key != b.Tags[i].Key {
			return false
		}
	}
	for i := range a.Fields {
		if a.Fields[i].Key != b.Fields[i].Key || fieldType(a.Fields[i].Value) != fieldType(b.Fields[i].Value) {
			return false
		}
	}
	return true
}

// claim checks that key names a column of type t, or notes in added that
// it needs one.
func (c *columns) claim(p *particle.Particle, added *[]column, key string, t colType) error {
	switch key {
	case colTime, colTimeNS, colSeries, colMeasurement, colEpoch:
		return fmt.Errorf("%w: key %q is a reserved column", ErrColumn, key)
	case "":
		return fmt.Errorf("%w: empty key", ErrColumn)
	}
	if len(key) > maxIdentifier || strings.IndexByte(key, 0) >= 0 || !utf8.ValidString(key) {
		return fmt.Errorf("%w: key %q is no column name (1 to %d bytes of UTF-8 without NUL)", ErrColumn, key, maxIdentifier)
	}
	have, ok := c.types[key]
	if !ok {
		*added = append(*added, column{key, t})
		return nil
	}
	if have != t {
		return fmt.Errorf("%w: %s %q: column has type %s, the particle's value needs %s", ErrColumn, p.Measurement, key, have, t)
	}
	return nil
}

// text checks that s can be stored as text: UTF-8 without NUL. The error
// names s as what followed by key, which are apart so that a valid s
// costs no concatenation.
func text(what, key, s string) error {
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s%s: %q is not UTF-8 without NUL", ErrColumn, what, key, s)
	}
	return nil
}

// seriesKey returns the series of p in line protocol: the measurement and
// the sorted tags, escaped.
func seriesKey(p *particle.Particle) string {
	var b strings.Builder
	n := len(p.Measurement)
	for _, t := range p.Tags {
		n += len(t.Key) + len(t.Value) + 2
	}
	b.Grow(n)
	escape(&b, p.Measurement, ", ")
	for _, t := range p.Tags {
		b.WriteByte(',')
		escape(&b, t.Key, ",= ")
		b.WriteByte('=')
		escape(&b, t.Value, ",= ")
	}
	return b.String()
}

// escape writes s with a backslash before each byte of special and each
// backslash.
func escape(b *strings.Builder, s, special string) {
	if !strings.ContainsAny(s, special) && strings.IndexByte(s, '\\') < 0 {
		b.WriteString(s)
		return
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || strings.IndexByte(special, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}
