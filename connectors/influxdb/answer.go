package influxdb

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/particle"
)

// maxMessage bounds the bytes of an answer's body that are read.
const maxMessage = 64 << 10

// serverError makes the error of an answer other than 204 from its
// status, headers and body.
func serverError(status int, h http.Header, body []byte) *ServerError {
	e := &ServerError{StatusCode: status, Message: strings.TrimSpace(string(body))}
	var v struct {
		Error   string `json:"error"`
		Message string `json:"message"`
		Errors  []struct {
			Line int `json:"line"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &v) == nil {
		switch {
		case v.Error != "":
			e.Message = v.Error
		case v.Message != "":
			e.Message = v.Message
		}
		for _, l := range v.Errors {
			e.lines = append(e.lines, l.Line)
		}
	}
	if s := h.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			e.RetryAfter = max(time.Until(t), 0)
		}
	}
	return e
}

// The parts of a partial write's message that name lines. InfluxDB 1.x
// quotes each line it cannot parse and names the first field or tag
// whose points it dropped, with their count; 2.x and sensorstorm's
// endpoint number the lines, and sensorstorm's counts them.
var (
	unparsable = "unable to parse '"
	lineNumber = regexp.MustCompile(`(?m)(?:^|[\s,(])line (\d+)(?::|\b)`)
	conflict   = regexp.MustCompile(`input field ("(?:[^"\\]|\\.)*") on measurement ("(?:[^"\\]|\\.)*") is type (\w+), already exists as type \w+`)
	invalidKey = regexp.MustCompile(`input (field|tag) ("(?:[^"\\]|\\.)*") on measurement ("(?:[^"\\]|\\.)*") is invalid`)
	dropCount  = regexp.MustCompile(`dropped=(\d+)`)
	badCount   = regexp.MustCompile(`(\d+) bad lines`)
)

// named returns the lines of a batch that a 400 or 422 answer names, as
// indexes into lines (the batch's lines without their newlines) and ps
// (their particles), and whether they are surely all the lines the
// server refused: only when it numbered every one, as 2.x and
// sensorstorm's endpoint do. InfluxDB 1.x names the type of the first
// field type conflict only (the lines with that field of that type are
// named), and leaves out the lines it could not parse when it also
// dropped points (1.6.7 does). Lines that fit its names but outnumber the
// points it says it dropped are not returned: which of them it dropped is
// not said.
func (e *ServerError) named(lines [][]byte, ps []*particle.Particle) (bad []int, all bool) {
	seen := make([]bool, len(lines))
	add := func(i int) {
		if i >= 0 && i < len(lines) && !seen[i] {
			seen[i] = true
			bad = append(bad, i)
		}
	}
	for _, n := range e.lines {
		add(n - 1)
	}
	for _, m := range lineNumber.FindAllStringSubmatch(e.Message, -1) {
		n, _ := strconv.Atoi(m[1])
		add(n - 1)
	}
	numbered := len(bad)
	if m := badCount.FindStringSubmatch(e.Message); m != nil {
		if n, _ := strconv.Atoi(m[1]); n > numbered {
			numbered = -1 // more than it listed
		}
	}
	e.quoted(lines, add)
	parsed := len(bad)
	e.dropped(ps, add)
	if m := dropCount.FindStringSubmatch(e.Message); m != nil {
		if n, _ := strconv.Atoi(m[1]); len(bad)-parsed > n {
			for _, i := range bad[parsed:] {
				seen[i] = false
			}
			bad = bad[:parsed]
		}
		return bad, false
	}
	return bad, len(bad) > 0 && len(bad) == numbered
}

// quoted adds the lines InfluxDB 1.x quotes as unparsable.
func (e *ServerError) quoted(lines [][]byte, add func(int)) {
	if !strings.Contains(e.Message, unparsable) {
		return
	}
	byText := make(map[string][]int, len(lines))
	for i, l := range lines {
		byText[string(l)] = append(byText[string(l)], i)
	}
	for rest := e.Message; ; {
		i := strings.Index(rest, unparsable)
		if i < 0 {
			return
		}
		rest = rest[i+len(unparsable):]
		// The line ends at the "': " that follows it; a line may hold
		// "': " itself, so try each.
		for j := 0; ; {
			k := strings.Index(rest[j:], "': ")
			if k < 0 {
				break
			}
			if is, ok := byText[rest[:j+k]]; ok {
				for _, i := range is {
					add(i)
				}
				break
			}
			j += k + 1
		}
	}
}

// dropped adds the lines whose points InfluxDB 1.x names as dropped: by
// a field type conflict, or an invalid field or tag key.
func (e *ServerError) dropped(ps []*particle.Particle, add func(int)) {
	if m := conflict.FindStringSubmatch(e.Message); m != nil {
		field, meas, kind := unquote(m[1]), unquote(m[2]), m[3]
		for i, p := range ps {
			if v, ok := p.Field(field); ok && p.Measurement == meas && influxType(v.Kind()) == kind {
				add(i)
			}
		}
	}
	if m := invalidKey.FindStringSubmatch(e.Message); m != nil {
		key, meas := unquote(m[2]), unquote(m[3])
		for i, p := range ps {
			var ok bool
			if m[1] == "field" {
				_, ok = p.Field(key)
			} else {
				_, ok = p.Tag(key)
			}
			if ok && p.Measurement == meas {
				add(i)
			}
		}
	}
}

// unquote returns a Go-quoted string's text, or s when it is not one.
func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// influxType returns InfluxDB's name of a field kind, as its type
// conflicts spell it.
func influxType(k particle.ValueKind) string {
	switch k {
	case particle.KindFloat:
		return "float"
	case particle.KindInt:
		return "integer"
	case particle.KindUint:
		return "unsigned"
	case particle.KindBool:
		return "boolean"
	}
	return "string"
}
