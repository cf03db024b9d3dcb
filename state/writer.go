package state

import (
	"encoding/binary"
	"math"
)

// Writer appends values to a buffer in the form a [Reader] reads. The zero
// Writer is ready to use; it never fails.
type Writer struct {
	buf []byte
}

// NewWriter returns a Writer that appends to buf[:0], reusing its memory.
func NewWriter(buf []byte) *Writer { return &Writer{buf: buf[:0]} }

// Bytes returns what was written. It aliases the Writer's buffer until the
// next write or [Writer.Reset].
func (w *Writer) Bytes() []byte { return w.buf }

// Len returns the number of bytes written.
func (w *Writer) Len() int { return len(w.buf) }

// Reset empties the Writer, keeping its memory.
func (w *Writer) Reset() { w.buf = w.buf[:0] }

// PutUvarint writes x as an unsigned varint: one byte below 128.
func (w *Writer) PutUvarint(x uint64) { w.buf = binary.AppendUvarint(w.buf, x) }

// PutVarint writes x as a zig-zag varint: one byte from -64 to 63.
func (w *Writer) PutVarint(x int64) { w.buf = binary.AppendVarint(w.buf, x) }

// PutLen writes a length or count, n >= 0, as [Reader.ReadLen] reads it.
func (w *Writer) PutLen(n int) { w.PutUvarint(uint64(n)) }

// PutCount writes a count n >= 0 of things not in the input, such as
// the readings folded into an accumulator, as [Reader.ReadCount] reads
// it: an unsigned varint.
func (w *Writer) PutCount(n int) { w.PutUvarint(uint64(n)) }

// PutFloat64 writes the 8 bytes of x's IEEE 754 bits, so that every value,
// NaN payloads and negative zero included, reads back the same.
func (w *Writer) PutFloat64(x float64) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(x))
}

// PutBool writes one byte, 0 or 1.
func (w *Writer) PutBool(b bool) {
	var x byte
	if b {
		x = 1
	}
	w.buf = append(w.buf, x)
}

// PutBytes writes the length of b, then b.
func (w *Writer) PutBytes(b []byte) {
	w.PutLen(len(b))
	w.buf = append(w.buf, b...)
}

// PutString writes the length of s, then s.
func (w *Writer) PutString(s string) {
	w.PutLen(len(s))
	w.buf = append(w.buf, s...)
}
