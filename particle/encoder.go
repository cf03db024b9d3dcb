package particle

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Encoder writes particles as InfluxDB line protocol into a buffer, one
// line each, with measurement, keys and values escaped as line protocol
// requires.
//
// It writes what github.com/influxdata/line-protocol/v2's encoder writes,
// byte for byte, and rejects what that encoder rejects, but in one pass
// per name (that encoder scans each name five times), except where
// InfluxDB reads lines otherwise (see Decoder): string field values
// escape only backslashes and double quotes, and tag values hold control
// characters other than NUL, newline and carriage return as they are.
//
// The zero Encoder is ready to use and writes nanosecond timestamps. A
// particle that cannot be encoded leaves no trace in the buffer; Err keeps
// the first such error until Reset.
//
// An Encoder is not safe for concurrent use.
type Encoder struct {
	buf  []byte
	prec Precision
	tags []Tag
	err  error
}

// SetPrecision sets the unit of the timestamps written from now on.
// Timestamps are truncated towards zero to it.
func (e *Encoder) SetPrecision(p Precision) { e.prec = p }

// Bytes returns the lines encoded since the last Reset. The slice is valid
// until the next call of Encode or Reset.
func (e *Encoder) Bytes() []byte { return e.buf }

// Reset empties the buffer, keeping its memory, and clears Err.
func (e *Encoder) Reset() {
	e.buf = e.buf[:0]
	e.err = nil
}

// Err returns the first error of Encode since the last Reset.
func (e *Encoder) Err() error { return e.err }

// Encode appends p as one line. It returns ErrMetaParticle for a meta
// particle, ErrNoFields for a particle without fields, and an error naming
// the culprit for a name or value line protocol cannot represent: an empty
// or invalid UTF-8 name or tag value, a name with control characters, a
// tag value with a NUL, newline or carriage return (other control
// characters are written as they are, as InfluxDB takes them), a name or
// tag value with a trailing backslash, a measurement starting with '#',
// duplicate tag keys, a non-finite float, a string with a newline
// (ErrNewlineInString), an invalid Value. Tags need not be sorted.
func (e *Encoder) Encode(p *Particle) error {
	if err := e.encode(p); err != nil {
		if e.err == nil {
			e.err = err
		}
		return err
	}
	return nil
}

// CheckEncodable returns the error Encode would return for p, without
// encoding it. Sources call it where a particle enters, so that one line
// protocol cannot hold is rejected there, with its position and payload,
// before it is acknowledged, rather than failed later by a sink. It
// formats no number: it costs a third of encoding.
func CheckEncodable(p *Particle) error {
	var sorted []Tag
	tags, err := checkParticle(p, &sorted)
	if err != nil {
		return err
	}
	if err := checkNames(p, tags); err != nil {
		return fmt.Errorf("particle: encode: %w", err)
	}
	return nil
}

// precisionUnits holds the nanoseconds in a unit of each Precision.
var precisionUnits = [...]int64{Nanosecond: 1, Microsecond: 1e3, Millisecond: 1e6, Second: 1e9}

func (e *Encoder) encode(p *Particle) error {
	if !e.prec.valid() {
		return fmt.Errorf("particle: encode: %w %d", ErrUnknownPrecision, e.prec)
	}
	b, err := encodeLine(e.buf, p, &e.tags, precisionUnits[e.prec])
	if err != nil {
		return err
	}
	e.buf = b
	return nil
}

// encodeLine appends the line of p to b, with its timestamp in units of
// unit nanoseconds, or reports why line protocol cannot hold p. Unsorted
// tags are sorted in *sorted, reused between calls.
func encodeLine(b []byte, p *Particle, sorted *[]Tag, unit int64) ([]byte, error) {
	tags, err := checkParticle(p, sorted)
	if err != nil {
		return nil, err
	}
	b, err = appendLine(b, p, tags, unit)
	if err != nil {
		return nil, fmt.Errorf("particle: encode: %w", err)
	}
	return b, nil
}

// checkParticle reports why line protocol cannot hold p, but for its
// names, which appendLine checks as it writes them and checkNames
// without writing them; it returns the tags sorted, in *sorted if they
// were not.
func checkParticle(p *Particle, sorted *[]Tag) ([]Tag, error) {
	switch {
	case p.Meta != nil:
		return nil, ErrMetaParticle
	case len(p.Fields) == 0:
		return nil, ErrNoFields
	case strings.HasPrefix(p.Measurement, "#"):
		return nil, fmt.Errorf("particle: encode: measurement %q starts with '#', which would make a comment line", p.Measurement)
	}
	// Values are checked first, so that a bad value is reported before a
	// bad name, as the line-protocol encoder, which takes values ready
	// made, would.
	for _, f := range p.Fields {
		if err := checkValue(f.Value); err != nil {
			return nil, fmt.Errorf("particle: encode: field %q: %w", f.Key, err)
		}
	}
	tags := p.Tags
	if !slices.IsSortedFunc(tags, compareTags) {
		*sorted = append((*sorted)[:0], tags...)
		slices.SortFunc(*sorted, compareTags)
		tags = *sorted
	}
	return tags, nil
}

// checkNames returns the error appendLine would return for p with tags,
// without writing the line. TestEncoderMatchesLineProtocol holds the two
// to the same rules.
func checkNames(p *Particle, tags []Tag) error {
	if !validName(p.Measurement, &measurementEscapes) {
		return fmt.Errorf("invalid measurement %q", p.Measurement)
	}
	for i, t := range tags {
		if !validName(t.Key, &keyEscapes) {
			return fmt.Errorf("invalid tag key %q", t.Key)
		}
		if !validName(t.Value, &tagValEscapes) {
			return fmt.Errorf("invalid tag value %s=%q", t.Key, t.Value)
		}
		if i > 0 && t.Key <= tags[i-1].Key {
			return fmt.Errorf("tag key %q out of order (previous key %q)", t.Key, tags[i-1].Key)
		}
	}
	for _, f := range p.Fields {
		if !validName(f.Key, &keyEscapes) {
			return fmt.Errorf("invalid field key %q", f.Key)
		}
	}
	return nil
}

// appendLine appends the line of p, with its tags sorted as given and its
// timestamp in units of unit nanoseconds. On error, the bytes appended to
// b are garbage, beyond len(b) of the caller.
func appendLine(b []byte, p *Particle, tags []Tag, unit int64) ([]byte, error) {
	var ok bool
	if b, ok = appendName(b, p.Measurement, &measurementEscapes); !ok {
		return nil, fmt.Errorf("invalid measurement %q", p.Measurement)
	}
	for i, t := range tags {
		b = append(b, ',')
		if b, ok = appendName(b, t.Key, &keyEscapes); !ok {
			return nil, fmt.Errorf("invalid tag key %q", t.Key)
		}
		b = append(b, '=')
		if b, ok = appendName(b, t.Value, &tagValEscapes); !ok {
			return nil, fmt.Errorf("invalid tag value %s=%q", t.Key, t.Value)
		}
		if i > 0 && t.Key <= tags[i-1].Key {
			return nil, fmt.Errorf("tag key %q out of order (previous key %q)", t.Key, tags[i-1].Key)
		}
	}
	sep := byte(' ')
	for _, f := range p.Fields {
		b = append(b, sep)
		sep = ','
		if b, ok = appendName(b, f.Key, &keyEscapes); !ok {
			return nil, fmt.Errorf("invalid field key %q", f.Key)
		}
		b = append(b, '=')
		b = appendValue(b, f.Value)
	}
	b = append(b, ' ')
	b = appendInt(b, p.Time/unit)
	return append(b, '\n'), nil
}

// checkValue reports a value line protocol cannot hold.
func checkValue(v Value) error {
	switch v.kind {
	case KindFloat:
		if f := math.Float64frombits(v.bits); math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("non-finite float %v", f)
		}
	case KindString:
		if !utf8.ValidString(v.str) {
			return fmt.Errorf("invalid utf-8 found in value %q", v.str)
		}
		if strings.IndexByte(v.str, '\n') >= 0 {
			return fmt.Errorf("%w: %q", ErrNewlineInString, v.str)
		}
	case KindInt, KindUint, KindBool:
	default:
		return errors.New("invalid value")
	}
	return nil
}

// appendValue appends v, checked by checkValue, as a field value.
func appendValue(b []byte, v Value) []byte {
	if v.kind == KindString {
		return appendStringValue(b, v.str)
	}
	return v.AppendTo(b)
}

// escapes classifies the bytes of a name: those written as they are (0),
// those written after a backslash, and those that need a closer look
// (control characters, DEL, bytes of multi-byte UTF-8 sequences).
type escapes [256]uint8

const (
	escBackslash uint8 = 1 + iota
	escCheck
	escControl // a control character written as it is
)

func newEscapes(chars string) escapes {
	var e escapes
	for c := range len(e) {
		if c < 0x20 || c >= 0x7f {
			e[c] = escCheck
		}
	}
	for i := range len(chars) {
		e[chars[i]] = escBackslash
	}
	return e
}

// tagValueEscapes are keyEscapes with the control characters InfluxDB
// takes in a tag value (isTagControl) written as they are.
func tagValueEscapes() escapes {
	e := newEscapes(",= ")
	for c := range 0x80 {
		if isTagControl(byte(c)) {
			e[c] = escControl
		}
	}
	return e
}

// The escapes of line protocol: measurements escape spaces and commas;
// tag keys, tag values and field keys also escape equal signs.
var (
	measurementEscapes = newEscapes(" ,")
	keyEscapes         = newEscapes(",= ")
	tagValEscapes      = tagValueEscapes()
)

// appendName appends s escaped, or reports false if line protocol cannot
// hold it: if it is empty, invalid UTF-8, has control characters or ends
// with a backslash (which would escape what follows).
func appendName(b []byte, s string, esc *escapes) ([]byte, bool) {
	if s == "" || s[len(s)-1] == '\\' {
		return b, false
	}
	for i := range len(s) {
		if esc[s[i]] != 0 {
			return appendNameSlow(b, s, i, esc)
		}
	}
	return append(b, s...), true
}

// validName reports whether appendName accepts s.
func validName(s string, esc *escapes) bool {
	if s == "" || s[len(s)-1] == '\\' {
		return false
	}
	for i := range len(s) {
		if esc[s[i]] == escCheck {
			return validNameSlow(s[i:], esc)
		}
	}
	return true
}

// validNameSlow is validName for the rest of a name from its first byte
// that needs a closer look.
func validNameSlow(s string, esc *escapes) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for i := range len(s) {
		if c := s[i]; esc[c] != escControl && (c < 0x20 || c == 0x7f) {
			return false
		}
	}
	return true
}

// appendNameSlow is appendName for a name whose byte i is not plain.
func appendNameSlow(b []byte, s string, i int, esc *escapes) ([]byte, bool) {
	if !utf8.ValidString(s[i:]) {
		return b, false
	}
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case esc[c] == escControl:
			b = append(b, c)
		case c < 0x20 || c == 0x7f:
			return b, false
		case esc[c] == escBackslash:
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return b, true
}

// appendStringValue appends s, checked by checkValue, quoted and escaped
// as a string field value: InfluxDB's only escapes there are \\ and \",
// and it reads \n, \r and \t as a backslash and a letter, so tabs and
// carriage returns are written as they are.
func appendStringValue(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := range len(s) {
		if c := s[i]; c == '\\' || c == '"' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', c)
			start = i + 1
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendLineProtocol appends p as one line of line protocol to dst, with
// timestamps in the given precision. On error it returns dst unchanged.
// It is a convenience for one-off lines; an Encoder reuses its memory.
func AppendLineProtocol(dst []byte, p *Particle, prec Precision) ([]byte, error) {
	e := Encoder{buf: dst, prec: prec}
	if err := e.Encode(p); err != nil {
		return dst, err
	}
	return e.Bytes(), nil
}
