package state

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Reader reads the values a [Writer] wrote, in the same order. Its first
// error sticks (see [Reader.Err]); after it every read returns a zero
// value.
type Reader struct {
	buf []byte
	off int
	err error
}

// NewReader returns a Reader of b. The Reader does not copy b: the slices
// returned by [Reader.ReadBytes] alias it.
func NewReader(b []byte) *Reader { return &Reader{buf: b} }

// Err returns the first error met, a [*DecodeError], or nil.
func (r *Reader) Err() error { return r.err }

// Offset returns the offset of the next value in the input.
func (r *Reader) Offset() int { return r.off }

// Len returns the number of bytes not read yet.
func (r *Reader) Len() int { return len(r.buf) - r.off }

// Fail records err, wrapped in a [*DecodeError] at the current offset, as
// the Reader's error unless it has one already: a decoder that finds a
// value it cannot accept (an unknown version, a count out of range) stops
// the Reader as bad bytes would.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = &DecodeError{Offset: r.off, Err: err}
	}
}

// ReadUvarint reads an unsigned varint.
func (r *Reader) ReadUvarint() uint64 { return r.varint(binary.Uvarint) }

// ReadVarint reads a zig-zag varint.
func (r *Reader) ReadVarint() int64 {
	return int64(r.varint(func(b []byte) (uint64, int) {
		x, n := binary.Varint(b)
		return uint64(x), n
	}))
}

// varint reads a varint with decode, binary.Uvarint or binary.Varint.
func (r *Reader) varint(decode func([]byte) (uint64, int)) uint64 {
	if r.err != nil {
		return 0
	}
	x, n := decode(r.buf[r.off:])
	switch {
	case n == 0:
		r.Fail(ErrTruncated)
		return 0
	case n < 0:
		r.Fail(fmt.Errorf("%w: varint overflows 64 bits", ErrMalformed))
		return 0
	}
	r.off += n
	return x
}

// ReadLen reads a length or count written by [Writer.PutLen] and checks it
// against the bytes left, each element taking at least one byte, so that
// a decoder can size a slice by it without trusting bad bytes.
func (r *Reader) ReadLen() int {
	start := r.off
	x := r.ReadUvarint()
	if r.err == nil && x > uint64(r.Len()) {
		r.off = start
		r.Fail(fmt.Errorf("%w: length %d past the end of the input", ErrTruncated, x))
		return 0
	}
	return int(x)
}

// ReadCount reads a count written by [Writer.PutCount]. Unlike
// [Reader.ReadLen] it does not bound the count by the bytes left, which
// the things counted do not take; it fails with [ErrMalformed] on a count
// beyond int.
func (r *Reader) ReadCount() int {
	at := r.off
	n := r.ReadUvarint()
	if n > math.MaxInt {
		r.off = at
		r.Fail(fmt.Errorf("%w: count %d", ErrMalformed, n))
		return 0
	}
	return int(n)
}

// ReadFloat64 reads a float64 written by [Writer.PutFloat64].
func (r *Reader) ReadFloat64() float64 {
	b := r.next(8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// ReadBool reads a boolean.
func (r *Reader) ReadBool() bool {
	b := r.next(1)
	switch {
	case b == nil:
		return false
	case b[0] > 1:
		r.off--
		r.Fail(fmt.Errorf("%w: boolean %d", ErrMalformed, b[0]))
		return false
	}
	return b[0] == 1
}

// ReadBytes reads a length-prefixed byte slice. The slice aliases the
// Reader's input: copy it to keep it past the input's life.
func (r *Reader) ReadBytes() []byte {
	n := r.ReadLen()
	if r.err != nil {
		return nil
	}
	return r.next(n)[:n:n]
}

// ReadString reads a length-prefixed string.
func (r *Reader) ReadString() string { return string(r.ReadBytes()) }

// next consumes n bytes, or fails with ErrTruncated and returns nil.
func (r *Reader) next(n int) []byte {
	if r.err != nil {
		return nil
	}
	if r.Len() < n {
		r.Fail(ErrTruncated)
		return nil
	}
	b := r.buf[r.off : r.off+n]
	r.off += n
	return b
}
