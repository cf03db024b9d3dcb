package syncbuffer

import "math"

// Min returns the buffered item that Release hands out next, without
// removing it, or (zero, false) when the buffer is empty.
func (b *Buffer[T]) Min() (T, bool) {
	if e, from, ok := b.next(math.MaxInt64); ok {
		if from == fromBuckets {
			return *b.buckets.at(), true
		}
		return *b.slot(e.slot()), true
	}
	var zero T
	return zero, false
}
