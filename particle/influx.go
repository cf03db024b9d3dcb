package particle

import (
	"bytes"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// Where line protocol's decoder (v2.2) and InfluxDB read a line apart,
// the Decoder reads it as InfluxDB does:
//
//   - in a string field value, only \\ and \" are escapes: \n, \r and \t
//     are a backslash and a letter (line protocol's decoder makes them a
//     newline, a carriage return and a tab);
//   - a tag value may hold control characters other than NUL, newline
//     and carriage return (line protocol's decoder rejects the line).
//
// Such lines are parsed again, substituted: each of those control
// characters, and each n, r and t after a backslash, is replaced by a
// placeholder, two private-use characters that line protocol takes as
// they are everywhere, and the placeholders in what it returns are
// turned back into the bytes they stand for. A control character in a
// measurement or a key leaves the line rejected, with line protocol's
// error.

// Byte c stands as placeholderEsc followed by placeholderBase+c, for c
// below 0x80; placeholderEsc itself, where the input has it, as two of
// it, so that any input survives the substitution.
const (
	placeholderEsc  = '\ue000'
	placeholderBase = '\ue001'
)

// escBytes is placeholderEsc's UTF-8 form.
var escBytes = []byte(string(placeholderEsc))

// errControl rejects a line with a control character where InfluxDB's
// reading and line protocol's agree to reject it; the line's error is
// line protocol's.
var errControl = errors.New("particle: control character in a measurement or key")

// isTagControl reports whether c is a control character that InfluxDB
// takes in a tag value and line protocol's decoder does not.
func isTagControl(c byte) bool {
	return (c > 0 && c < 0x20 && c != '\n' && c != '\r') || c == 0x7f
}

// mayDifferFromInfluxDB reports whether line protocol's reading of e may
// differ from InfluxDB's: a string field value holds a tab, carriage
// return or newline, which may have been an escape.
func (e *parsed) mayDifferFromInfluxDB() bool {
	for _, f := range e.fields {
		if f.Value.kind == KindString && strings.ContainsAny(f.Value.str, "\t\r\n") {
			return true
		}
	}
	return false
}

// reparse parses the current entry's line again, substituted, and
// reports whether it decodes; not when nothing was substituted.
func (d *Decoder) reparse() (parsed, bool) {
	sub, changed := substitute(d.scratch[:0], d.feed.entryBytes())
	d.scratch = sub
	if !changed {
		return parsed{}, false
	}
	lp := lineprotocol.NewDecoderWithBytes(sub)
	if !lp.Next() {
		return parsed{}, false
	}
	e, err := d.parseEntry(lp, true)
	return e, err == nil
}

// substitute appends line to dst with each control character of
// isTagControl, and each n, r and t after a backslash, replaced by its
// placeholder, then a newline. It reports whether it replaced any such
// byte.
func substitute(dst, line []byte) ([]byte, bool) {
	changed := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case isTagControl(c):
			dst = appendPlaceholder(dst, placeholderBase+rune(c))
			changed = true
		case c == '\\' && i+1 < len(line) && strings.IndexByte("nrt", line[i+1]) >= 0:
			// Also after an escaped backslash (\\n): the n is a
			// letter there, for line protocol too.
			i++
			dst = appendPlaceholder(append(dst, '\\'), placeholderBase+rune(line[i]))
			changed = true
		case bytes.HasPrefix(line[i:], escBytes):
			dst = appendPlaceholder(dst, placeholderEsc)
			i += len(escBytes) - 1
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '\n'), changed
}

func appendPlaceholder(dst []byte, r rune) []byte {
	return utf8.AppendRune(utf8.AppendRune(dst, placeholderEsc), r)
}

// restored returns b, with its placeholders turned back into what they
// stand for when restore is set; errControl when one was a control
// character and ctlOK is false. The result may be b itself.
func restored(b []byte, restore, ctlOK bool) ([]byte, error) {
	if !restore || !bytes.Contains(b, escBytes) {
		return b, nil
	}
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		if !bytes.HasPrefix(b, escBytes) {
			_, n := utf8.DecodeRune(b)
			out, b = append(out, b[:n]...), b[n:]
			continue
		}
		r, n := utf8.DecodeRune(b[len(escBytes):])
		b = b[len(escBytes)+n:]
		if r == placeholderEsc {
			out = append(out, escBytes...)
			continue
		}
		c := byte(r - placeholderBase)
		if isTagControl(c) && !ctlOK {
			return nil, errControl
		}
		out = append(out, c)
	}
	return out, nil
}

// entryBytes returns the current entry's whole line without its line
// feed, reading more of the input if needed, as entryRaw does; the
// caller checked that it is not too long.
func (f *feeder) entryBytes() []byte {
	for {
		line := f.buf[f.entryStart:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			return line[:i]
		}
		if f.pending != nil || f.err != nil || !f.fillAhead() {
			// fill may have moved the line to the front of buf.
			return f.buf[f.entryStart:]
		}
	}
}
