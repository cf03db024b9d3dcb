package mqtt

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sensorstorm/sensorstorm/particle"
)

// jsonError is a problem at byte offset off of a JSON payload.
type jsonError struct {
	off int
	err error
}

func (e *jsonError) Error() string { return e.err.Error() }
func (e *jsonError) Unwrap() error { return e.err }

// jsonParser decodes a JSON payload as encoding/json decodes into an any
// (objects as maps, numbers as json.Number), but stricter: a key given
// twice in one object (which encoding/json lets the last win) and an
// integer beyond int64 (which would silently become a float) are
// *jsonErrors placed at their offset.
type jsonParser struct {
	dec     *json.Decoder
	payload []byte
}

// parseJSON decodes payload, one JSON value, and returns it with the byte
// range of each element when it is an array, or of the whole value.
func parseJSON(payload []byte) (v any, spans [][2]int, err error) {
	p := &jsonParser{dec: json.NewDecoder(strings.NewReader(string(payload))), payload: payload}
	p.dec.UseNumber()
	start := p.next()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if tok != json.Delim('[') {
		v, err = p.value(tok, start)
		return v, [][2]int{{start, int(p.dec.InputOffset())}}, p.end(err)
	}
	arr := []any{}
	for p.dec.More() {
		start := p.next()
		e, err := p.read()
		if err != nil {
			return nil, nil, err
		}
		arr = append(arr, e)
		spans = append(spans, [2]int{start, int(p.dec.InputOffset())})
	}
	_, err = p.dec.Token()
	return arr, spans, p.end(err)
}

// end returns err, or an error if data follows the value.
func (p *jsonParser) end(err error) error {
	if err == nil && p.dec.More() {
		return &jsonError{off: p.next(), err: errDataAfterJSON}
	}
	return err
}

// next returns the offset of the next token: the decoder's offset is the
// end of the last one, before any separator.
func (p *jsonParser) next() int {
	off := int(p.dec.InputOffset())
	for off < len(p.payload) && strings.IndexByte(" \t\r\n,:", p.payload[off]) >= 0 {
		off++
	}
	return off
}

// read decodes the next value.
func (p *jsonParser) read() (any, error) {
	start := p.next()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	return p.value(tok, start)
}

// value decodes the value that starts with tok, at offset start.
func (p *jsonParser) value(tok json.Token, start int) (any, error) {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			arr := []any{}
			for p.dec.More() {
				e, err := p.read()
				if err != nil {
					return nil, err
				}
				arr = append(arr, e)
			}
			_, err := p.dec.Token()
			return arr, err
		}
		obj := map[string]any{}
		for p.dec.More() {
			off := p.next()
			k, err := p.dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ := k.(string) // object keys are strings
			if _, dup := obj[key]; dup {
				return nil, &jsonError{off: off, err: fmt.Errorf("%w %q", ErrDuplicateKey, key)}
			}
			if obj[key], err = p.read(); err != nil {
				return nil, err
			}
		}
		_, err := p.dec.Token()
		return obj, err
	case json.Number:
		if !strings.ContainsAny(string(t), ".eE") {
			if _, err := strconv.ParseInt(string(t), 10, 64); err != nil {
				return nil, &jsonError{off: start, err: fmt.Errorf("%w: integer %s beyond int64", particle.ErrValueOutOfRange, t)}
			}
		}
	}
	return tok, nil
}
