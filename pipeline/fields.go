package pipeline

import (
	"encoding"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// yamlField is a key of a configuration struct: its name and the index
// of its field, through inline fields.
type yamlField struct {
	name  string
	index []int
	typ   reflect.Type
}

// yamlFields returns the keys of struct type t, following inline fields.
func yamlFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline"):
			for _, in := range yamlFields(f.Type) {
				in.index = append([]int{i}, in.index...)
				out = append(out, in)
			}
		default:
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			out = append(out, yamlField{name: name, index: []int{i}, typ: f.Type})
		}
	}
	return out
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// nested reports whether t is a struct decoded key by key, rather than a
// value read from one scalar.
func nested(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshaler) && t != reflect.TypeFor[time.Time]()
}

// decodeStruct decodes mapping n into the struct v points to, key by key
// and into nested structs, so that each problem is reported where it is:
// an unknown key at the key, a bad value at the value. Keys of the struct
// listed in exclude are unknown. It reports whether all went well.
func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, what string, exclude ...string) bool {
	before := len(d.errs)
	var fields []yamlField
	var names []string
	for _, f := range yamlFields(v.Type()) {
		if !slices.Contains(exclude, f.name) {
			fields = append(fields, f)
			names = append(names, f.name)
		}
	}
	m := d.mapping(n, what, names...)
	for _, f := range fields {
		val := m[f.name]
		if val == nil {
			continue
		}
		field := v.FieldByIndex(f.index)
		switch {
		case nested(f.typ):
			d.decodeStruct(val, field, what+": "+f.name)
		case f.typ == durationType:
			// Negative durations reach the config's own validation.
			field.SetInt(int64(d.duration(val, what+": "+f.name, true)))
		default:
			if err := val.Decode(field.Addr().Interface()); err != nil {
				d.fail(val, "%s: %s: %s", what, f.name, yamlMessage(err))
			} else if field.CanInt() && field.Int() > maxOf(f.name) {
				d.fail(val, "%s: %s: %d is more than the maximum, %d", what, f.name, field.Int(), maxOf(f.name))
			}
		}
	}
	return m != nil && len(d.errs) == before
}

// yamlMessage returns a decoding error without the yaml package's
// preamble and line numbers, which the caller's position replaces, and
// without the package prefix of a value's own error ("mqtt: QoS ..."),
// which the key's path already gives.
func yamlMessage(err error) string {
	var msgs []string
	for _, line := range strings.Split(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n"), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "line "); ok {
			if _, msg, ok := strings.Cut(rest, ": "); ok {
				line = msg
			}
		}
		if pkg, msg, ok := strings.Cut(line, ": "); ok && pkg != "" && strings.Trim(pkg, "abcdefghijklmnopqrstuvwxyz") == "" {
			line = msg
		}
		msgs = append(msgs, line)
	}
	return strings.Join(msgs, "; ")
}

// valueOf returns the value of key in mapping n, or n itself when it has
// none: where to report a problem with key.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return n
}
