package file

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/particle"
)

// Defaults of a Format.
const (
	// DefaultSeparator is the default DelimitedConfig.Separator.
	DefaultSeparator = ","
	// DefaultTimeLayout is the default TimeConfig.Layout.
	DefaultTimeLayout = LayoutAuto
	// DefaultZone is the default TimeConfig.Zone.
	DefaultZone = "UTC"
)

// Special values of TimeConfig.Layout and DelimitedConfig.Separator.
const (
	// LayoutAuto accepts RFC 3339, "2006-01-02 15:04:05" with an optional
	// fraction, and epoch numbers whose unit follows from their number of
	// integer digits: up to 11 seconds, up to 14 milliseconds, up to 17
	// microseconds, more nanoseconds.
	LayoutAuto = "auto"
	// SeparatorWhitespace splits fields at runs of spaces and tabs.
	SeparatorWhitespace = "whitespace"
)

// Syntax is the syntax of a recording.
type Syntax uint8

const (
	// LineProtocol is InfluxDB line protocol, one particle per line.
	LineProtocol Syntax = iota
	// Delimited is delimited text (CSV and its relatives), one record per
	// line, mapped to particles by a DelimitedConfig.
	Delimited
)

var syntaxNames = [...]string{"lp", "delimited"}

// String returns "lp" or "delimited".
func (s Syntax) String() string {
	if int(s) < len(syntaxNames) {
		return syntaxNames[s]
	}
	return "Syntax(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText implements encoding.TextMarshaler.
func (s Syntax) MarshalText() ([]byte, error) {
	if int(s) >= len(syntaxNames) {
		return nil, fmt.Errorf("%w: syntax %d", ErrInvalidFormat, s)
	}
	return []byte(syntaxNames[s]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Syntax) UnmarshalText(b []byte) error {
	for i, n := range syntaxNames {
		if string(b) == n {
			*s = Syntax(i)
			return nil
		}
	}
	return fmt.Errorf("%w: syntax %q", ErrInvalidFormat, b)
}

// Format says how the records of a file become particles. The zero Format
// is line protocol with nanosecond timestamps.
type Format struct {
	// Syntax is the file's syntax. Defaults to LineProtocol.
	Syntax Syntax `yaml:"syntax"`
	// Precision is the unit of line-protocol timestamps. Defaults to
	// nanoseconds.
	Precision particle.Precision `yaml:"precision"`
	// MaxLineLength is the most bytes a line may have: a longer line is
	// one malformed record (particle.ErrLineTooLong), read past without
	// being held, so that reading holds about this many bytes at most.
	// Defaults to particle.DefaultMaxLineLength.
	MaxLineLength int `yaml:"max_line_length"`
	// Delimited maps the columns of delimited text; it is used when Syntax
	// is Delimited.
	Delimited DelimitedConfig `yaml:"delimited"`
}

// DelimitedConfig maps the columns of delimited text to particles: one
// column or more give the time, some give tags and the others fields.
//
// Lines are split at the separator; a field in double quotes may contain
// the separator, and "" inside it stands for one quote. Spaces around a
// field are ignored. Blank lines and lines whose fields are all empty are
// skipped without being counted as records. A record with none of its
// field values present is skipped and counted (see Reader.Skipped).
type DelimitedConfig struct {
	// Separator is the one byte between fields (",", ";", "\t", ...) or
	// SeparatorWhitespace. Defaults to DefaultSeparator.
	Separator string `yaml:"separator"`
	// Header says that the first non-blank line names the columns. A
	// header with one name fewer than the records (as R writes them) names
	// the columns after the first, which holds row names. Defaults to
	// false.
	Header bool `yaml:"header"`
	// Measurement names the particles. Defaults to the file's base name
	// without extensions.
	Measurement string `yaml:"measurement"`
	// Time locates and parses the timestamp.
	Time TimeConfig `yaml:"time"`
	// Tags are the columns that become tags. Defaults to none.
	Tags []Column `yaml:"tags"`
	// Fields are the columns that become fields. Defaults to every column
	// that is neither time nor tag, with type ValueAuto and the header's
	// names as keys ("c<index>" without a header).
	Fields []Column `yaml:"fields"`
	// ConstTags are added to every particle. Defaults to none.
	ConstTags map[string]string `yaml:"const_tags"`
	// DecimalComma makes "2,6" the number 2.6. Defaults to false.
	DecimalComma bool `yaml:"decimal_comma"`
	// Thousands lists bytes that group digits and are removed from numbers
	// before parsing, such as "." or "\xa0". Defaults to none.
	Thousands string `yaml:"thousands"`
	// Missing lists the texts that stand for a missing value, such as
	// "-200" or "NA". A numeric sentinel also matches the same number
	// written otherwise ("-200,0"). A missing field is left out of its
	// particle; an empty field is always missing. Defaults to none.
	Missing []string `yaml:"missing"`
}

// TimeConfig locates and parses the timestamp of a delimited record.
type TimeConfig struct {
	// Columns hold the timestamp; several are joined with one space, such
	// as a date column and a time column. Defaults to column 0.
	Columns []Column `yaml:"columns"`
	// Layout is a Go time layout ("02/01/2006 15.04.05"), LayoutAuto, or
	// "s", "ms", "us" or "ns" for epoch numbers in that unit (a fraction
	// is allowed). Defaults to DefaultTimeLayout.
	Layout string `yaml:"layout"`
	// Zone is the time zone of layouts without one: "UTC", "Local", an
	// IANA name ("Europe/Rome") or a fixed offset ("+01:00"). Defaults to
	// DefaultZone.
	Zone string `yaml:"zone"`
}

// Column names a column of delimited text, by Name when it is set (which
// needs a header), else by Index.
type Column struct {
	// Index is the zero-based position of the column.
	Index int `yaml:"index"`
	// Name is the column's name in the header.
	Name string `yaml:"name"`
	// Key is the tag or field key. Defaults to Name, or "c<index>".
	Key string `yaml:"key"`
	// Type is the type of a field's values. Defaults to ValueAuto.
	Type ValueType `yaml:"type"`
}

// ValueType is the type of a delimited field's values.
type ValueType uint8

const (
	// ValueAuto makes numbers floats, true and false booleans, and any
	// other text a string, value by value.
	ValueAuto ValueType = iota
	// ValueFloat is a float64.
	ValueFloat
	// ValueInt is an int64.
	ValueInt
	// ValueUint is a uint64.
	ValueUint
	// ValueString is text.
	ValueString
	// ValueBool is true or false (also 1 and 0, t and f).
	ValueBool
)

var valueTypeNames = [...]string{"auto", "float", "int", "uint", "string", "bool"}

// String returns the type's name, for example "float".
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return "ValueType(" + strconv.Itoa(int(t)) + ")"
}

// MarshalText implements encoding.TextMarshaler.
func (t ValueType) MarshalText() ([]byte, error) {
	if int(t) >= len(valueTypeNames) {
		return nil, fmt.Errorf("%w: value type %d", ErrInvalidFormat, t)
	}
	return []byte(valueTypeNames[t]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *ValueType) UnmarshalText(b []byte) error {
	for i, n := range valueTypeNames {
		if string(b) == n {
			*t = ValueType(i)
			return nil
		}
	}
	return fmt.Errorf("%w: value type %q", ErrInvalidFormat, b)
}

func (c *DelimitedConfig) setDefaults() {
	if c.Separator == "" {
		c.Separator = DefaultSeparator
	}
	if len(c.Time.Columns) == 0 {
		c.Time.Columns = []Column{{Index: 0}}
	}
	if c.Time.Layout == "" {
		c.Time.Layout = DefaultTimeLayout
	}
	if c.Time.Zone == "" {
		c.Time.Zone = DefaultZone
	}
}

// Validate reports a Format that cannot be used. It applies the defaults
// to a copy first.
func (f Format) Validate() error {
	if f.Syntax > Delimited {
		return fmt.Errorf("%w: syntax %d", ErrInvalidFormat, f.Syntax)
	}
	if _, err := f.Precision.MarshalText(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidFormat, err)
	}
	dc := f.decoderConfig()
	if err := dc.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidFormat, err)
	}
	if f.Syntax != Delimited {
		return nil
	}
	c := f.Delimited
	c.setDefaults()
	return c.validate()
}

// decoderConfig returns the line-protocol decoder configuration of f.
func (f Format) decoderConfig() particle.DecoderConfig {
	return particle.DecoderConfig{Precision: f.Precision, MaxLineLength: f.MaxLineLength}
}

// maxLineLength returns f.MaxLineLength or its default.
func (f Format) maxLineLength() int {
	if f.MaxLineLength == 0 {
		return particle.DefaultMaxLineLength
	}
	return f.MaxLineLength
}

func (c *DelimitedConfig) validate() error {
	sep := c.Separator
	switch {
	case sep != SeparatorWhitespace && len(sep) != 1:
		return fmt.Errorf("%w: separator %q is not one byte", ErrInvalidFormat, sep)
	case sep == `"`:
		return fmt.Errorf("%w: separator is the quote", ErrInvalidFormat)
	case c.DecimalComma && sep == ",":
		return fmt.Errorf("%w: decimal comma with a comma separator", ErrInvalidFormat)
	case strings.ContainsAny(c.Thousands, "0123456789-+"):
		return fmt.Errorf("%w: thousands separators %q include a digit or sign", ErrInvalidFormat, c.Thousands)
	}
	if _, err := parseLayout(c.Time.Layout); err != nil {
		return err
	}
	if _, err := parseZone(c.Time.Zone); err != nil {
		return err
	}
	cols := append(append(append([]Column(nil), c.Time.Columns...), c.Tags...), c.Fields...)
	for _, col := range cols {
		if col.Index < 0 {
			return fmt.Errorf("%w: negative column index %d", ErrInvalidFormat, col.Index)
		}
		if col.Name != "" && !c.Header {
			return fmt.Errorf("%w: column %q named without a header", ErrInvalidFormat, col.Name)
		}
		if col.Type > ValueBool {
			return fmt.Errorf("%w: value type %d", ErrInvalidFormat, col.Type)
		}
	}
	for k, v := range c.ConstTags {
		if k == "" || v == "" {
			return fmt.Errorf("%w: empty constant tag %q=%q", ErrInvalidFormat, k, v)
		}
	}
	return nil
}

// parseZone returns the location that a zone names: "UTC", "Local", an
// IANA name, or a fixed offset such as "+01:00", "-0500" or "+01".
func parseZone(zone string) (*time.Location, error) {
	switch zone {
	case "", "UTC", "Z":
		return time.UTC, nil
	case "Local":
		return time.Local, nil
	}
	if zone[0] == '+' || zone[0] == '-' {
		for _, layout := range []string{"-07:00", "-0700", "-07"} {
			if t, err := time.Parse(layout, zone); err == nil {
				_, off := t.Zone()
				return time.FixedZone(zone, off), nil
			}
		}
		return nil, fmt.Errorf("%w: time zone offset %q", ErrInvalidFormat, zone)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("%w: time zone: %w", ErrInvalidFormat, err)
	}
	return loc, nil
}
