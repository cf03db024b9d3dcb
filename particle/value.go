package particle

import (
	"math"
	"strconv"
)

// ValueKind is the type of a field value.
type ValueKind uint8

// The field value types of line protocol.
const (
	KindInvalid ValueKind = iota
	KindFloat
	KindInt
	KindUint
	KindString
	KindBool
)

var valueKindNames = [...]string{"invalid", "float", "int", "uint", "string", "bool"}

// String returns the kind's name, for example "float".
func (k ValueKind) String() string {
	if int(k) < len(valueKindNames) {
		return valueKindNames[k]
	}
	return "ValueKind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a typed field value. The zero Value is invalid.
type Value struct {
	kind ValueKind
	bits uint64
	str  string
}

// Float returns a float Value.
func Float(f float64) Value { return Value{kind: KindFloat, bits: math.Float64bits(f)} }

// Int returns an integer Value.
func Int(i int64) Value { return Value{kind: KindInt, bits: uint64(i)} }

// Uint returns an unsigned integer Value.
func Uint(u uint64) Value { return Value{kind: KindUint, bits: u} }

// String returns a string Value.
func String(s string) Value { return Value{kind: KindString, str: s} }

// Bool returns a boolean Value.
func Bool(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.bits = 1
	}
	return v
}

// Kind returns the value's type.
func (v Value) Kind() ValueKind { return v.kind }

// FloatValue returns the value of a float Value; it panics for other kinds.
func (v Value) FloatValue() float64 { v.must(KindFloat); return math.Float64frombits(v.bits) }

// IntValue returns the value of an int Value; it panics for other kinds.
func (v Value) IntValue() int64 { v.must(KindInt); return int64(v.bits) }

// UintValue returns the value of a uint Value; it panics for other kinds.
func (v Value) UintValue() uint64 { v.must(KindUint); return v.bits }

// StringValue returns the value of a string Value; it panics for other kinds.
func (v Value) StringValue() string { v.must(KindString); return v.str }

// BoolValue returns the value of a bool Value; it panics for other kinds.
func (v Value) BoolValue() bool { v.must(KindBool); return v.bits != 0 }

// Number returns a numeric value (float, int, uint or bool as 0 or 1) as a
// float64, and false for strings and invalid values.
func (v Value) Number() (float64, bool) {
	switch v.kind {
	case KindFloat:
		return math.Float64frombits(v.bits), true
	case KindInt:
		return float64(int64(v.bits)), true
	case KindUint, KindBool:
		return float64(v.bits), true
	}
	return 0, false
}

// Equal reports whether v and w have the same kind and value. Float values
// compare by bit pattern, so NaN equals NaN.
func (v Value) Equal(w Value) bool { return v == w }

// String formats the value for people: numbers as line protocol writes
// them, strings quoted with Go's escapes. The Encoder, not String, writes
// line protocol.
func (v Value) String() string {
	return string(v.AppendTo(nil))
}

// AppendTo appends the text that String returns to b.
func (v Value) AppendTo(b []byte) []byte {
	switch v.kind {
	case KindFloat:
		return appendFloat(b, math.Float64frombits(v.bits))
	case KindInt:
		return append(appendInt(b, int64(v.bits)), 'i')
	case KindUint:
		return append(appendUint(b, v.bits), 'u')
	case KindString:
		return strconv.AppendQuote(b, v.str)
	case KindBool:
		return strconv.AppendBool(b, v.bits != 0)
	}
	return append(b, "<invalid>"...)
}

func (v Value) must(k ValueKind) {
	if v.kind != k {
		panic("particle: " + k.String() + " value requested from " + v.kind.String() + " value")
	}
}
