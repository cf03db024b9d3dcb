package particle

import (
	"errors"
	"strconv"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

var (
	// ErrNoTime reports a line without a timestamp, decoded without a
	// DecoderConfig.DefaultTime.
	ErrNoTime = errors.New("particle: line has no timestamp")
	// ErrDuplicateTag reports a tag key given twice in one line.
	ErrDuplicateTag = errors.New("particle: duplicate tag key")
	// ErrDuplicateField reports a field key given twice in one line.
	ErrDuplicateField = errors.New("particle: duplicate field key")
	// ErrUnterminatedString reports a string field value without its
	// closing quote on its line. A string field value cannot hold a
	// newline: a raw one ends the line, and \n is a backslash and an n,
	// as InfluxDB reads it.
	ErrUnterminatedString = errors.New("particle: string field value not closed before the end of the line")
	// ErrNewlineInString reports a string field value with a newline,
	// which line protocol, read as InfluxDB reads it, cannot hold.
	ErrNewlineInString = errors.New("particle: newline in a string field value")
	// ErrLineTooLong reports a line longer than
	// DecoderConfig.MaxLineLength, or than the maximum of another line
	// reader: one bad line, read past without being held.
	ErrLineTooLong = errors.New("particle: line too long")
	// ErrNoFields reports a particle without fields, which line protocol
	// cannot express.
	ErrNoFields = errors.New("particle: no fields")
	// ErrMetaParticle reports an attempt to encode a meta particle, which
	// has no line-protocol form.
	ErrMetaParticle = errors.New("particle: meta particle has no line-protocol form")
	// ErrUnknownPrecision reports a precision other than ns, us, ms and s.
	ErrUnknownPrecision = errors.New("particle: unknown precision")
	// ErrValueOutOfRange reports a number, field value or timestamp, too
	// large for its type. It is line protocol's own sentinel, so that
	// errors.Is works without importing that package.
	ErrValueOutOfRange = lineprotocol.ErrValueOutOfRange
)

// DecodeError reports one malformed line. Decoding goes on with the next
// line.
type DecodeError struct {
	// Source names the input: a file path, an MQTT topic, ...
	Source string
	// Line is the one-based number of the line where the error is.
	Line int
	// Column is the one-based byte offset of the error in its line, or 0
	// when the error concerns the whole line.
	Column int
	// Err is the cause: line protocol's syntax error, ErrValueOutOfRange,
	// ErrNoTime, ErrDuplicateTag, ErrDuplicateField,
	// ErrUnterminatedString or ErrLineTooLong, or, where a source checked
	// what it decoded, the error of CheckEncodable.
	Err error
}

// Error returns "particle: decode <source>:<line>:<column>: <cause>",
// leaving out the column when it is 0.
func (e *DecodeError) Error() string {
	b := append([]byte("particle: decode "), e.Source...)
	if e.Source == "" {
		b = append(b, "line "...)
	} else {
		b = append(b, ':')
	}
	b = strconv.AppendInt(b, int64(e.Line), 10)
	if e.Column > 0 {
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(e.Column), 10)
	}
	b = append(b, ": "...)
	return string(append(b, e.Err.Error()...))
}

// Unwrap returns e.Err.
func (e *DecodeError) Unwrap() error { return e.Err }
