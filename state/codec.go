package state

// Codec encodes values of type A, such as a window's accumulators, with a
// [Writer] and decodes them with a [Reader]. An Aggregator of package
// operation that implements Codec of its accumulator type has its
// accumulators snapshotted by it instead of by encoding/gob.
//
// DecodeState must read exactly what EncodeState wrote, and return an
// error when r's error is set (see [Reader.Err]) or the value is not one
// it accepts; it must not panic on bad bytes.
type Codec[A any] interface {
	// EncodeState writes a to w.
	EncodeState(w *Writer, a A) error
	// DecodeState reads a value written by EncodeState from r.
	DecodeState(r *Reader) (A, error)
}
