package particle

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"
)

// ErrSchema is wrapped by the errors of NewSchema and Schema.Decode.
var ErrSchema = errors.New("particle: schema")

// Schema maps a Go struct type to particles and back. It is built once, by
// reflection, from the struct's `sensor` tags; decoding and encoding then
// read and write the struct's fields at their offsets, without reflection.
//
// Tags:
//
//	Temp   float64   `sensor:"temperature"`  a field (float, int, uint, string or bool kinds)
//	Node   string    `sensor:"node,tag"`     a tag (string)
//	At     time.Time `sensor:",time"`        the event time (time.Time or int64 ns)
//
// Struct fields without a tag are ignored. A Schema is safe for concurrent
// use.
type Schema[T any] struct {
	measurement string
	time        *slot
	tags        []slot
	fields      []slot
}

type slot struct {
	name   string
	offset uintptr
	kind   reflect.Kind
	isTime bool // time.Time rather than int64 ns
}

// NewSchema returns the Schema of T, a struct type, for particles of the
// given measurement.
func NewSchema[T any](measurement string) (*Schema[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %s is not a struct", ErrSchema, t)
	}
	s := &Schema[T]{measurement: measurement}
	timeType := reflect.TypeFor[time.Time]()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("sensor")
		if !ok || tag == "-" {
			continue
		}
		name, opt, _ := strings.Cut(tag, ",")
		sl := slot{name: name, offset: f.Offset, kind: f.Type.Kind(), isTime: f.Type == timeType}
		switch opt {
		case "time":
			if !sl.isTime && sl.kind != reflect.Int64 {
				return nil, fmt.Errorf("%w: %s.%s: time must be time.Time or int64", ErrSchema, t, f.Name)
			}
			s.time = &sl
		case "tag":
			if sl.kind != reflect.String {
				return nil, fmt.Errorf("%w: %s.%s: a tag must be a string", ErrSchema, t, f.Name)
			}
			s.tags = append(s.tags, sl)
		case "":
			if name == "" {
				name = f.Name
				sl.name = name
			}
			if !fieldKind(sl.kind) || sl.isTime {
				return nil, fmt.Errorf("%w: %s.%s: unsupported field type %s", ErrSchema, t, f.Name, f.Type)
			}
			s.fields = append(s.fields, sl)
		default:
			return nil, fmt.Errorf("%w: %s.%s: unknown option %q", ErrSchema, t, f.Name, opt)
		}
	}
	return s, nil
}

func fieldKind(k reflect.Kind) bool {
	switch k {
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.String, reflect.Bool:
		return true
	}
	return false
}

// Decode sets *dst from p. Tags and fields that p lacks leave their struct
// fields at their zero value; a field whose value cannot be stored in the
// struct field's type (a string into a float, say) is an error naming it.
func (s *Schema[T]) Decode(p *Particle, dst *T) error {
	*dst = *new(T)
	base := unsafe.Pointer(dst)
	if s.time != nil {
		if s.time.isTime {
			*(*time.Time)(unsafe.Add(base, s.time.offset)) = time.Unix(0, p.Time).UTC()
		} else {
			*(*int64)(unsafe.Add(base, s.time.offset)) = p.Time
		}
	}
	for i := range s.tags {
		if v, ok := p.Tag(s.tags[i].name); ok {
			*(*string)(unsafe.Add(base, s.tags[i].offset)) = v
		}
	}
	for i := range s.fields {
		sl := &s.fields[i]
		v, ok := p.Field(sl.name)
		if !ok {
			continue
		}
		if err := store(unsafe.Add(base, sl.offset), sl.kind, v); err != nil {
			return fmt.Errorf("%w: field %q: %w", ErrSchema, sl.name, err)
		}
	}
	return nil
}

// store writes v at ptr, a struct field of kind k.
func store(ptr unsafe.Pointer, k reflect.Kind, v Value) error {
	switch k {
	case reflect.String:
		if v.Kind() != KindString {
			return fmt.Errorf("%s value for a string", v.Kind())
		}
		*(*string)(ptr) = v.StringValue()
		return nil
	case reflect.Bool:
		if v.Kind() != KindBool {
			return fmt.Errorf("%s value for a bool", v.Kind())
		}
		*(*bool)(ptr) = v.BoolValue()
		return nil
	}
	n, ok := v.Number()
	if !ok || v.Kind() == KindBool {
		return fmt.Errorf("%s value for a number", v.Kind())
	}
	switch k {
	case reflect.Float64:
		*(*float64)(ptr) = n
	case reflect.Float32:
		*(*float32)(ptr) = float32(n)
	case reflect.Int:
		*(*int)(ptr) = int(integer(v, n))
	case reflect.Int64:
		*(*int64)(ptr) = integer(v, n)
	case reflect.Int32:
		*(*int32)(ptr) = int32(integer(v, n))
	case reflect.Int16:
		*(*int16)(ptr) = int16(integer(v, n))
	case reflect.Int8:
		*(*int8)(ptr) = int8(integer(v, n))
	case reflect.Uint:
		*(*uint)(ptr) = uint(integer(v, n))
	case reflect.Uint64:
		*(*uint64)(ptr) = uint64(integer(v, n))
	case reflect.Uint32:
		*(*uint32)(ptr) = uint32(integer(v, n))
	case reflect.Uint16:
		*(*uint16)(ptr) = uint16(integer(v, n))
	case reflect.Uint8:
		*(*uint8)(ptr) = uint8(integer(v, n))
	}
	return nil
}

// integer keeps integer values exact instead of going through float64.
func integer(v Value, n float64) int64 {
	switch v.Kind() {
	case KindInt:
		return v.IntValue()
	case KindUint:
		return int64(v.UintValue())
	}
	return int64(n)
}

// Encode returns the particle of *v.
func (s *Schema[T]) Encode(v *T) Particle {
	base := unsafe.Pointer(v)
	p := Particle{Measurement: s.measurement}
	if s.time != nil {
		if s.time.isTime {
			p.Time = (*time.Time)(unsafe.Add(base, s.time.offset)).UnixNano()
		} else {
			p.Time = *(*int64)(unsafe.Add(base, s.time.offset))
		}
	}
	if len(s.tags) > 0 {
		p.Tags = make([]Tag, len(s.tags))
		for i := range s.tags {
			p.Tags[i] = Tag{Key: s.tags[i].name, Value: *(*string)(unsafe.Add(base, s.tags[i].offset))}
		}
		p.SortTags()
	}
	p.Fields = make([]Field, len(s.fields))
	for i := range s.fields {
		sl := &s.fields[i]
		p.Fields[i] = Field{Key: sl.name, Value: load(unsafe.Add(base, sl.offset), sl.kind)}
	}
	return p
}

// load reads the struct field of kind k at ptr as a Value.
func load(ptr unsafe.Pointer, k reflect.Kind) Value {
	switch k {
	case reflect.Float64:
		return Float(*(*float64)(ptr))
	case reflect.Float32:
		return Float(float64(*(*float32)(ptr)))
	case reflect.Int:
		return Int(int64(*(*int)(ptr)))
	case reflect.Int64:
		return Int(*(*int64)(ptr))
	case reflect.Int32:
		return Int(int64(*(*int32)(ptr)))
	case reflect.Int16:
		return Int(int64(*(*int16)(ptr)))
	case reflect.Int8:
		return Int(int64(*(*int8)(ptr)))
	case reflect.Uint:
		return Uint(uint64(*(*uint)(ptr)))
	case reflect.Uint64:
		return Uint(*(*uint64)(ptr))
	case reflect.Uint32:
		return Uint(uint64(*(*uint32)(ptr)))
	case reflect.Uint16:
		return Uint(uint64(*(*uint16)(ptr)))
	case reflect.Uint8:
		return Uint(uint64(*(*uint8)(ptr)))
	case reflect.String:
		return String(*(*string)(ptr))
	case reflect.Bool:
		return Bool(*(*bool)(ptr))
	}
	return Value{}
}
