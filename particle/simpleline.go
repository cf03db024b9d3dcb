package particle

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// maxSimpleLine is the length of the longest line decodeSimple takes;
// longer lines go through lineprotocol.Decoder.
const maxSimpleLine = 4 << 10

// decodeSimple decodes the next line into *p, bypassing lineprotocol.Decoder,
// if the line is simple, and reports whether it was. Most lines of a
// recording are: a measurement, tags and field keys of printable ASCII
// without escapes or quotes, fields written plainly, one space between
// the sections, and a timestamp. On such a line, lineprotocol.Decoder and
// decodeSimple yield the same particle (FuzzDecodeSimple checks it);
// anything else (blank lines, comments, escapes, other spacing, a missing
// timestamp, any error) goes to lineprotocol.Decoder, which keeps the
// one definition of what a line means and of every error.
//
// It must only be called when lp has read nothing beyond the last entry
// it decoded (Decoder.lpClean): lp then never sees the line.
func (d *Decoder) decodeSimple(p *Particle) bool {
	line, n, ok := d.feed.peekLine(min(maxSimpleLine, d.cfg.MaxLineLength))
	if !ok {
		return false
	}
	m, tags, fields, ns, ok := d.parseSimple(line)
	if !ok {
		return false
	}
	if checkKeys(tags, fields) != nil {
		return false
	}
	setHash, shared := d.tagSet(tags)
	if d.feed.takeLine(n) {
		// lp counts the lines it reads, and will not read this one.
		d.lpLines++
	}
	d.line = d.feed.entryLine + d.cfg.StartLine - 1
	d.finish(p, ns, m, tags, fields, setHash, shared)
	return true
}

// parseSimple decodes line, without its line ending, as decodeSimple
// describes; ok is false if line is not simple. Tags and fields are
// appended to the free parts of their slabs, as decodeEntry does.
func (d *Decoder) parseSimple(line []byte) (m string, tags []Tag, fields []Field, ns int64, ok bool) {
	i := scanName(line, 0)
	if i == 0 || line[0] == '#' {
		return "", nil, nil, 0, false
	}
	m = d.key(&d.measurement, line[:i])
	tags = room(&d.tagSlab, tagSlabLen)
	for i < len(line) && line[i] == ',' {
		k := i + 1
		eq := scanName(line, k)
		if eq == k || eq == len(line) || line[eq] != '=' {
			return "", nil, nil, 0, false
		}
		end := scanName(line, eq+1)
		if end == eq+1 {
			return "", nil, nil, 0, false
		}
		tags = append(tags, Tag{Key: d.positional(&d.tagKeys, len(tags), line[k:eq]), Value: d.intern(line[eq+1 : end])})
		i = end
	}
	if i == len(line) || line[i] != ' ' {
		return "", nil, nil, 0, false
	}
	i++
	fields = room(&d.fieldSlab, fieldSlabLen)
	for {
		eq := scanName(line, i)
		if eq == i || eq == len(line) || line[eq] != '=' {
			return "", nil, nil, 0, false
		}
		v, end, vok := d.simpleValue(line, eq+1)
		if !vok || end == len(line) {
			return "", nil, nil, 0, false
		}
		fields = append(fields, Field{Key: d.positional(&d.fieldKeys, len(fields), line[i:eq]), Value: v})
		i = end + 1
		if line[end] == ' ' {
			break
		}
		if line[end] != ',' {
			return "", nil, nil, 0, false
		}
	}
	ns, ok = simpleTime(line[i:], d.cfg.Precision)
	return m, tags, fields, ns, ok
}

// scanName returns the end of the name that starts at line[i]: a run of
// printable ASCII other than space, comma, equals sign, backslash and
// double quote, which line protocol takes as they are in measurements,
// tag keys and values, and field keys.
func scanName(line []byte, i int) int {
	for i < len(line) {
		c := line[i]
		if c <= ' ' || c >= 0x7f || c == ',' || c == '=' || c == '\\' || c == '"' {
			break
		}
		i++
	}
	return i
}

// simpleValue decodes the field value that starts at line[i], as
// lineprotocol.Decoder.NextField and Decoder.value do, and returns it with
// its end: the index of the byte after it, or after its closing quote.
// ok is false for a value that is malformed or not simple: a string with
// an escape or without its closing quote on the line.
func (d *Decoder) simpleValue(line []byte, i int) (v Value, end int, ok bool) {
	if i == len(line) {
		return Value{}, 0, false
	}
	switch c := line[i]; {
	case c == '"':
		s := line[i+1:]
		q := bytes.IndexByte(s, '"')
		if q < 0 || bytes.IndexByte(s[:q], '\\') >= 0 || !utf8.Valid(s[:q]) {
			return Value{}, 0, false
		}
		return String(d.copyString(s[:q])), i + 1 + q + 1, true
	case c == 't' || c == 'T' || c == 'f' || c == 'F':
		end = scanValue(line, i)
		switch string(line[i:end]) {
		case "t", "T", "true", "True", "TRUE":
			return Bool(true), end, true
		case "f", "F", "false", "False", "FALSE":
			return Bool(false), end, true
		}
		return Value{}, 0, false
	case c == '-' || c == '.' || ('0' <= c && c <= '9'):
		if v, end, ok = plainNumber(line, i); ok {
			return v, end, true
		}
		end = scanValue(line, i)
		v, ok = number(line[i:end])
		return v, end, ok
	}
	return Value{}, 0, false
}

// scanValue returns the end of the field value that starts at line[i] and
// is not a string: line protocol ends it at a comma or white space.
func scanValue(line []byte, i int) int {
	for i < len(line) {
		if c := line[i]; c == ',' || c == ' ' || c == '\r' || c == '\n' {
			break
		}
		i++
	}
	return i
}

// plainNumber decodes the common forms of the numeric field value that
// starts at line[i], in one pass: an optional minus sign, 1 to 19 digits
// with at most one point among them, an optional suffix i or u, and a
// comma or space after it. A float must be at most 2^53 without its point
// and have at most 22 digits after it: it is then the quotient of two
// float64 that hold their values exactly, which one division rounds
// correctly, as strconv.ParseFloat does. ok is false for anything else,
// which number decodes.
func plainNumber(line []byte, i int) (v Value, end int, ok bool) {
	neg := line[i] == '-'
	j := i
	if neg {
		j++
	}
	var m uint64
	digits, frac := 0, -1 // frac counts the digits after the point, if any
scan:
	for ; j < len(line); j++ {
		switch c := line[j]; {
		case '0' <= c && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			break scan
		}
	}
	// 19 digits never overflow a uint64.
	if digits == 0 || digits > 19 || frac == 0 {
		return Value{}, 0, false
	}
	suffix := byte(0)
	if j < len(line) && (line[j] == 'i' || line[j] == 'u') {
		suffix = line[j]
		j++
	}
	if j == len(line) || (line[j] != ',' && line[j] != ' ') {
		return Value{}, 0, false
	}
	switch {
	case suffix == 0:
		if m > 1<<53 || frac > 22 {
			return Value{}, 0, false
		}
		f := float64(m)
		if frac > 0 {
			f /= float64pow10[frac]
		}
		if neg {
			f = -f
		}
		return Float(f), j, true
	case frac > 0:
	case suffix == 'u':
		return Uint(m), j, !neg
	case !neg && m <= math.MaxInt64:
		return Int(int64(m)), j, true
	case neg && m <= 1<<63:
		// -int64(1<<63) wraps around to math.MinInt64, as it should.
		return Int(-int64(m)), j, true
	}
	return Value{}, 0, false
}

// number parses a numeric field value, with its type suffix, as
// lineprotocol.Decoder.NextField does, and reports whether it is valid:
// the forms that plainNumber leaves, which go to strconv, as in
// lineprotocol.Decoder.
func number(b []byte) (Value, bool) {
	switch b[len(b)-1] {
	case 'i':
		x, err := strconv.ParseInt(bytesString(b[:len(b)-1]), 10, 64)
		return Int(x), err == nil
	case 'u':
		u, err := strconv.ParseUint(bytesString(b[:len(b)-1]), 10, 64)
		return Uint(u), err == nil
	}
	f, ok := parseFloat(b)
	return Float(f), ok
}

// parseInt parses b as strconv.ParseInt(string(b), 10, 64) does and
// reports whether it is valid.
func parseInt(b []byte) (int64, bool) {
	digits := b
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		digits = b[1:]
	}
	if u, ok := parseDigits(digits); ok {
		switch {
		case !neg && u <= math.MaxInt64:
			return int64(u), true
		case neg && u <= 1<<63:
			// -int64(1<<63) wraps around to math.MinInt64, as it should.
			return -int64(u), true
		}
	}
	x, err := strconv.ParseInt(bytesString(b), 10, 64)
	return x, err == nil
}

// parseDigits parses b, one to 19 decimal digits, which always fit a
// uint64; ok is false for anything else.
func parseDigits(b []byte) (u uint64, ok bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	return u, true
}

// parseFloat parses b as strconv.ParseFloat(string(b), 64) does, and
// reports whether it is valid and finite, as line protocol requires.
func parseFloat(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(bytesString(b), 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// float64pow10 holds the powers of ten that a float64 holds exactly.
var float64pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// simpleTime parses the timestamp that ends a simple line, with an
// optional carriage return after it, as lineprotocol.Decoder.Time does in
// precision prec. ok is false for anything else.
func simpleTime(b []byte, prec Precision) (ns int64, ok bool) {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	// Line protocol takes a timestamp of minus signs and digits, which
	// ParseInt then parses: the plus sign ParseInt also takes is the one
	// difference.
	if len(b) == 0 || b[0] == '+' {
		return 0, false
	}
	x, ok := parseInt(b)
	if !ok {
		return 0, false
	}
	if prec == Nanosecond {
		return x, true
	}
	unit := int64(1000)
	switch prec {
	case Millisecond:
		unit = 1e6
	case Second:
		unit = 1e9
	}
	if ns = x * unit; ns/unit != x {
		return 0, false
	}
	return ns, true
}

// bytesString returns b as a string without copying, for a call that
// does not keep it.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// peekLine returns the line that starts at the next byte to serve,
// without its newline, and its length with the newline, if the whole line
// is in buf, reading more input if needed, and it is at most limit bytes
// long. The last line of the input needs no newline, but a line cut
// short by a read error is not whole.
func (f *feeder) peekLine(limit int) (line []byte, n int, ok bool) {
	if f.col != 0 {
		return nil, 0, false
	}
	for {
		rest := f.buf[f.pos:]
		if i := bytes.IndexByte(rest[:min(len(rest), limit+1)], '\n'); i >= 0 {
			return rest[:i], i + 1, true
		}
		if len(rest) > limit || f.pending != nil || f.err != nil {
			return nil, 0, false
		}
		if f.r == nil || f.eof {
			return rest, len(rest), len(rest) > 0
		}
		f.fillAhead()
	}
}

// takeLine serves the n bytes of the line from peekLine to no one, as
// the current entry, and reports whether they end with a newline.
func (f *feeder) takeLine(n int) bool {
	f.entryLine, f.entryStart = f.line, f.pos
	f.pieceLine, f.pieceLineStart = f.line, f.pos
	f.keep = f.pos
	f.pos += n
	f.lineEnd = f.buf[f.pos-1] == '\n'
	if f.lineEnd {
		f.line++
		f.col = 0
	} else {
		f.col = n
	}
	return f.lineEnd
}
