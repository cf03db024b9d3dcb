// Package lpcases is the project's own table of line-protocol cases
// (cases.json, written here): bodies as clients send them, and what
// InfluxDB stores for each, or where sensorstorm deliberately reads them
// otherwise (the table of differences in docs/influxdb.md). The decoder, the
// encoder and the HTTP write endpoint are tested against it, the endpoint
// also side by side with a real InfluxDB 1.x.
package lpcases

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sensorstorm/sensorstorm/particle"
)

//go:embed cases.json
var casesJSON []byte

// Case is one body of line protocol and how it is read.
type Case struct {
	Name string `json:"name"`
	// Line is the body: one line, or one after comment and blank lines.
	Line string `json:"line"`
	// Measurement is the measurement of the point it stores, "m" when
	// empty; Tags and Fields its tags and fields, a field's value
	// written "kind:value" with kind float, int, uint, string or bool.
	Measurement string            `json:"measurement"`
	Tags        map[string]string `json:"tags"`
	Fields      map[string]string `json:"fields"`
	// Bad says that sensorstorm refuses the line.
	Bad bool `json:"bad"`
	// ReceiptTime says the line has no timestamp: it takes the time it
	// was received. The others are at 1 ns.
	ReceiptTime bool `json:"receipt_time"`
	// Differs, when set, says how sensorstorm reads the line otherwise
	// than InfluxDB, which answers it InfluxDBStatus.
	Differs        string `json:"differs"`
	InfluxDBStatus int    `json:"influxdb_status"`
}

// Cases returns the cases.
func Cases() ([]Case, error) {
	var cs []Case
	if err := json.Unmarshal(casesJSON, &cs); err != nil {
		return nil, fmt.Errorf("lpcases: %w", err)
	}
	return cs, nil
}

// Want returns the point c stores, its fields by key, at time ns.
func (c Case) Want(ns int64) (particle.Particle, error) {
	p := particle.Particle{Time: ns, Measurement: c.Measurement}
	if p.Measurement == "" {
		p.Measurement = "m"
	}
	for k, v := range c.Tags {
		p.Tags = append(p.Tags, particle.Tag{Key: k, Value: v})
	}
	for k, s := range c.Fields {
		v, err := ParseValue(s)
		if err != nil {
			return particle.Particle{}, fmt.Errorf("lpcases: case %q: field %q: %w", c.Name, k, err)
		}
		p.Fields = append(p.Fields, particle.Field{Key: k, Value: v})
	}
	Normalize(&p)
	return p, nil
}

// ParseValue parses a field value written "kind:value".
func ParseValue(s string) (particle.Value, error) {
	kind, v, ok := strings.Cut(s, ":")
	if !ok {
		return particle.Value{}, fmt.Errorf("value %q: want kind:value", s)
	}
	var err error
	switch kind {
	case "float":
		var f float64
		f, err = strconv.ParseFloat(v, 64)
		return particle.Float(f), err
	case "int":
		var i int64
		i, err = strconv.ParseInt(v, 10, 64)
		return particle.Int(i), err
	case "uint":
		var u uint64
		u, err = strconv.ParseUint(v, 10, 64)
		return particle.Uint(u), err
	case "bool":
		var b bool
		b, err = strconv.ParseBool(v)
		return particle.Bool(b), err
	case "string":
		return particle.String(v), nil
	}
	return particle.Value{}, fmt.Errorf("value %q: unknown kind %q", s, kind)
}

// Normalize sorts p's tags and fields by key and clears what a decoder
// numbers (Origin, Seq), so that points compare by their content.
func Normalize(p *particle.Particle) {
	p.Origin, p.Seq = 0, 0
	p.Tags = sortedBy(p.Tags, func(t particle.Tag) string { return t.Key })
	p.Fields = sortedBy(p.Fields, func(f particle.Field) string { return f.Key })
}

func sortedBy[T any](s []T, key func(T) string) []T {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	return out
}
