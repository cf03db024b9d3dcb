package mqtt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/particle"
)

// decoder turns payloads into particles. It is not safe for concurrent
// use.
type decoder struct {
	cfg  PayloadConfig
	lp   *particle.Decoder
	recv int64 // receive time of the JSON message being decoded
	// The line-protocol payloads being decoded are joined in buf, one
	// after the other; payload i starts at line starts[i].
	buf    []byte
	starts []int
	at     int // the payload payloadAt found last
	recvs  []int64
	tags   [][]particle.Tag // payload i's topic tags, when tmpl is set
	// tmpl has, per topic segment, the tag it becomes or "".
	tmpl     []string
	tmplRest bool
	isTag    map[string]bool
}

func newDecoder(cfg PayloadConfig) (*decoder, error) {
	d := &decoder{cfg: cfg, isTag: map[string]bool{}}
	dc := particle.DecoderConfig{Precision: cfg.Precision}
	if !cfg.RequireTime {
		dc.DefaultTime = func() int64 { return d.recvs[d.payloadAt(d.lp.Line())] }
	}
	lp, err := particle.NewDecoderBytes(nil, "", dc)
	if err != nil {
		return nil, err
	}
	d.lp = lp
	if cfg.TopicTags != "" {
		segs := strings.Split(cfg.TopicTags, "/")
		if segs[len(segs)-1] == "#" {
			d.tmplRest = true
			segs = segs[:len(segs)-1]
		}
		for _, s := range segs {
			name, ok := strings.CutPrefix(s, "{")
			if name, ok2 := strings.CutSuffix(name, "}"); ok && ok2 && name != "" {
				d.tmpl = append(d.tmpl, name)
			} else {
				d.tmpl = append(d.tmpl, "")
			}
		}
	}
	for _, t := range cfg.JSON.TagFields {
		d.isTag[t] = true
	}
	return d, nil
}

// maxJoined bounds the bytes of the payloads decoded joined, and so the
// buffer the decoder keeps for it.
const maxJoined = 256 << 10

// joinable reports whether a line-protocol payload may be decoded joined
// with others: a quote or a backslash could make its last entry run into
// the next payload.
//
// Two byte searches, not bytes.ContainsAny: it runs per message, and for
// the small payloads of most publishers each search is a few vector
// instructions where ContainsAny builds a set and tests byte by byte,
// several times slower.
func joinable(payload []byte) bool {
	return bytes.IndexByte(payload, '"') < 0 && bytes.IndexByte(payload, '\\') < 0
}

// decode decodes the payloads of msgs, calling emit for each particle and
// reject for each bad entry, which does not stop decoding, with the index
// of its message and the entry's text: a line of line protocol, an
// element of a JSON array, or the whole payload when it does not parse.
// The text is valid until reject returns. It returns emit's first error. Line-protocol payloads
// are decoded in one go when they are joinable, which saves resetting the
// decoder for each: messages are small and many.
func (d *decoder) decode(msgs []*message, emit func(i int, p particle.Particle) error, reject func(i int, err error, raw []byte)) error {
	if d.cfg.Format == FormatJSON {
		for i, m := range msgs {
			d.recv = m.recv
			tags := d.topicTags(m.topic)
			err := d.decodeJSON(m.topic, m.payload, func(p particle.Particle) error {
				p = withTags(p, tags)
				if err := particle.CheckEncodable(&p); err != nil {
					reject(i, &particle.DecodeError{Source: m.topic, Line: 1, Err: err}, m.payload)
					return nil
				}
				return emit(i, p)
			}, func(err error, raw []byte) { reject(i, err, raw) })
			if err != nil {
				return err
			}
		}
		return nil
	}
	for off := 0; off < len(msgs); {
		n, size := 1, len(msgs[off].payload)
		if joinable(msgs[off].payload) {
			for off+n < len(msgs) && joinable(msgs[off+n].payload) && size+len(msgs[off+n].payload) <= maxJoined {
				size += len(msgs[off+n].payload)
				n++
			}
		}
		if err := d.decodeLines(msgs[off:off+n], off, emit, reject); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// decodeLines decodes the line-protocol payloads of msgs joined. msgs
// starts at index off of the batch that emit and reject number.
func (d *decoder) decodeLines(msgs []*message, off int, emit func(int, particle.Particle) error, reject func(int, error, []byte)) error {
	d.buf, d.starts, d.recvs, d.tags, d.at = d.buf[:0], d.starts[:0], d.recvs[:0], d.tags[:0], 0
	line := 1
	for _, m := range msgs {
		d.starts = append(d.starts, line)
		d.recvs = append(d.recvs, m.recv)
		d.buf = append(append(d.buf, m.payload...), '\n')
		line += bytes.Count(m.payload, []byte{'\n'}) + 1
		if d.tmpl != nil {
			d.tags = append(d.tags, d.topicTags(m.topic))
		}
	}
	d.lp.ResetBytes(d.buf, "")
	var p particle.Particle
	for {
		err := d.lp.Decode(&p)
		if err == io.EOF {
			return nil
		}
		i := d.payloadAt(d.lp.Line())
		var de *particle.DecodeError
		switch {
		case errors.As(err, &de):
			// Place the error in its own payload.
			reject(off+i, &particle.DecodeError{Source: msgs[i].topic, Line: de.Line - d.starts[i] + 1, Column: de.Column, Err: de.Err}, d.lp.Raw())
			continue
		case err != nil:
			// Reading bytes cannot fail otherwise; report it as bad input.
			reject(off+i, &particle.DecodeError{Source: msgs[i].topic, Line: d.lp.Line() - d.starts[i] + 1, Err: err}, msgs[i].payload)
			return nil
		}
		if d.tmpl != nil {
			p = withTags(p, d.tags[i])
		}
		// A topic's tags, for one, may be what line protocol cannot
		// hold: rejected here, before the message is acknowledged.
		if err := particle.CheckEncodable(&p); err != nil {
			reject(off+i, &particle.DecodeError{Source: msgs[i].topic, Line: d.lp.Line() - d.starts[i] + 1, Err: err}, d.lp.Raw())
			continue
		}
		if err := emit(off+i, p); err != nil {
			return err
		}
	}
}

// payloadAt returns the index of the payload holding line of buf. The
// decoder asks for lines in order: it walks on from the payload it found
// last, which costs a step per payload, where a search per particle
// would cost several.
func (d *decoder) payloadAt(line int) int {
	i := d.at
	if i >= len(d.starts) || d.starts[i] > line {
		i = 0
	}
	for i+1 < len(d.starts) && d.starts[i+1] <= line {
		i++
	}
	d.at = i
	return i
}

func (d *decoder) topicTags(topic string) []particle.Tag {
	segs := strings.Split(topic, "/")
	if len(segs) < len(d.tmpl) || (len(segs) > len(d.tmpl) && !d.tmplRest) {
		return nil
	}
	var tags []particle.Tag
	for i, name := range d.tmpl {
		if name != "" && segs[i] != "" {
			tags = append(tags, particle.Tag{Key: name, Value: segs[i]})
		}
	}
	return tags
}

// withTags returns p with the tags it lacks added, in a new slice: p's
// own may be shared.
func withTags(p particle.Particle, tags []particle.Tag) particle.Particle {
	if len(tags) == 0 {
		return p
	}
	out := make([]particle.Tag, len(p.Tags), len(p.Tags)+len(tags))
	copy(out, p.Tags)
	for _, t := range tags {
		if _, ok := p.Tag(t.Key); !ok {
			out = append(out, t)
		}
	}
	p.Tags = out
	p.SortTags()
	return p
}

func (d *decoder) decodeJSON(topic string, payload []byte, emit func(particle.Particle) error, reject func(err error, raw []byte)) error {
	v, spans, err := parseJSON(payload)
	if err != nil {
		reject(jsonPosError(topic, payload, err), payload)
		return nil
	}
	objs, ok := v.([]any)
	if !ok {
		objs = []any{v}
	}
	for i, o := range objs {
		raw := payload[spans[i][0]:spans[i][1]]
		obj, ok := o.(map[string]any)
		if !ok {
			reject(&particle.DecodeError{Source: topic, Line: i + 1, Err: fmt.Errorf("element %d is %T, not an object", i+1, o)}, raw)
			continue
		}
		p, err := d.object(topic, obj)
		if err != nil {
			reject(&particle.DecodeError{Source: topic, Line: i + 1, Err: err}, raw)
			continue
		}
		if err := emit(p); err != nil {
			return err
		}
	}
	return nil
}

// jsonPosError places an error of parseJSON (a syntax error, a duplicate
// key, an integer out of range) at its line and column: the offsets of
// both are those of the byte at fault.
func jsonPosError(topic string, payload []byte, err error) error {
	var off int
	var se *json.SyntaxError
	var je *jsonError
	switch {
	case errors.As(err, &je):
		off = je.off
	case errors.As(err, &se):
		off = int(se.Offset)
	default:
		return &particle.DecodeError{Source: topic, Line: 1, Err: err}
	}
	off = min(off, len(payload))
	line := 1 + bytes.Count(payload[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(payload[:off], '\n')
	return &particle.DecodeError{Source: topic, Line: line, Column: col, Err: err}
}

// object makes a particle of one JSON object.
func (d *decoder) object(topic string, obj map[string]any) (particle.Particle, error) {
	c := &d.cfg.JSON
	p := particle.Particle{Measurement: c.Measurement}
	if p.Measurement == "" {
		p.Measurement = topic[strings.LastIndexByte(topic, '/')+1:]
	}
	if m, ok := obj[c.MeasurementField].(string); ok && c.MeasurementField != "" {
		p.Measurement = m
	}
	if tv, ok := obj[c.TimeField]; ok {
		t, err := parseTime(tv, c.TimeFormat)
		if err != nil {
			return p, fmt.Errorf("%w: member %q: %w", ErrTime, c.TimeField, err)
		}
		p.Time = t
	} else if d.cfg.RequireTime {
		return p, fmt.Errorf("%w: no member %q", ErrTime, c.TimeField)
	} else {
		p.Time = d.recv
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if k != c.TimeField && (k != c.MeasurementField || c.MeasurementField == "") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := d.member(&p, k, obj[k]); err != nil {
			return p, err
		}
	}
	if len(p.Fields) == 0 {
		return p, ErrNoFields
	}
	p.SortTags()
	return p, nil
}

func (d *decoder) member(p *particle.Particle, key string, v any) error {
	if key == "" {
		// Line protocol has no empty keys: the particle could not be
		// written out.
		return errors.New("member with an empty key")
	}
	switch v := v.(type) {
	case nil:
	case bool:
		p.Fields = append(p.Fields, particle.Field{Key: key, Value: particle.Bool(v)})
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) {
			return fmt.Errorf("member %q: %w", key, particle.ErrValueOutOfRange)
		}
		p.Fields = append(p.Fields, particle.Field{Key: key, Value: particle.Float(f)})
	case string:
		if d.isTag[key] || d.cfg.JSON.StringsAsTags {
			p.Tags = append(p.Tags, particle.Tag{Key: key, Value: v})
		} else {
			p.Fields = append(p.Fields, particle.Field{Key: key, Value: particle.String(v)})
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := d.member(p, key+"_"+k, v[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := d.member(p, key+"_"+strconv.Itoa(i), e); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseTime reads a JSON timestamp in format.
func parseTime(v any, format string) (int64, error) {
	var scale int64
	switch format {
	case "unix":
		scale = int64(time.Second)
	case "unix_ms":
		scale = int64(time.Millisecond)
	case "unix_us":
		scale = int64(time.Microsecond)
	case "unix_ns":
		scale = 1
	}
	if scale == 0 {
		s, ok := v.(string)
		if !ok {
			return 0, fmt.Errorf("%T, want a string", v)
		}
		layout := format
		if format == "rfc3339" {
			layout = time.RFC3339Nano
		}
		t, err := time.Parse(layout, s)
		if err != nil {
			return 0, err
		}
		// UnixNano is undefined outside int64 nanoseconds: year 3000
		// would come out negative.
		if t.Before(time.Unix(0, math.MinInt64)) || t.After(time.Unix(0, math.MaxInt64)) {
			return 0, fmt.Errorf("%w: %s is outside 1677-09-21 to 2262-04-11", particle.ErrValueOutOfRange, s)
		}
		return t.UnixNano(), nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%T, want a number", v)
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		if i > math.MaxInt64/scale || i < math.MinInt64/scale {
			return 0, particle.ErrValueOutOfRange
		}
		return i * scale, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, err
	}
	ns := f * float64(scale)
	if ns >= math.MaxInt64 || ns <= math.MinInt64 || math.IsNaN(ns) {
		return 0, particle.ErrValueOutOfRange
	}
	return int64(ns), nil
}
