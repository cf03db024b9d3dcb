package operation

import (
	"fmt"
	"time"
)

// Window is the span of event time a batch covers: [Start, End) in ns.
type Window struct {
	Start, End int64
}

// String returns the window as "[start, end)" in RFC 3339.
func (w Window) String() string {
	return fmt.Sprintf("[%s, %s)", time.Unix(0, w.Start).UTC().Format(time.RFC3339Nano), time.Unix(0, w.End).UTC().Format(time.RFC3339Nano))
}

type batcherKind uint8

const (
	tumbling batcherKind = iota + 1
	sliding
	session
	count
)

// Batcher decides which batches (windows) a particle falls in and when a
// batch is complete. Build one with [Tumbling], [Sliding], [Session] or
// [Count]; the zero Batcher is invalid.
//
// Time windows live in event time and are closed by the watermark: a
// window [Start, End) is complete once the watermark reaches End-1, since
// the synchronization buffer has then released every particle before End.
// A replay and the live run therefore cut the same windows.
type Batcher struct {
	kind        batcherKind
	size, slide int64
	n           int
}

// Tumbling returns a Batcher of consecutive windows of the given size,
// aligned on the Unix epoch: [k*size, (k+1)*size). It panics if size is
// not positive.
func Tumbling(size time.Duration) Batcher {
	if size <= 0 {
		panic("operation: non-positive tumbling window size")
	}
	return Batcher{kind: tumbling, size: int64(size), slide: int64(size)}
}

// Sliding returns a Batcher of windows of the given size starting every
// slide, aligned on the Unix epoch; a particle falls in size/slide windows
// (rounded up). It panics if size or slide is not positive or slide
// exceeds size.
func Sliding(size, slide time.Duration) Batcher {
	if size <= 0 || slide <= 0 || slide > size {
		panic("operation: sliding window needs 0 < slide <= size")
	}
	return Batcher{kind: sliding, size: int64(size), slide: int64(slide)}
}

// Session returns a Batcher of session windows: per key, a window grows
// while particles follow each other within gap and closes when the
// watermark passes the last particle plus gap. Its Window is [first
// particle, last particle + gap). It panics if gap is not positive.
func Session(gap time.Duration) Batcher {
	if gap <= 0 {
		panic("operation: non-positive session gap")
	}
	return Batcher{kind: session, size: int64(gap)}
}

// Count returns a Batcher of windows of n particles per key, complete when
// the n-th particle arrives; a partial window is completed at the end of
// the stream. Its Window is [first particle, last particle + 1ns). It
// panics if n is not positive.
func Count(n int) Batcher {
	if n <= 0 {
		panic("operation: non-positive count window size")
	}
	return Batcher{kind: count, n: n}
}

// String describes the batcher, for example "tumbling(10m0s)".
func (b Batcher) String() string {
	switch b.kind {
	case tumbling:
		return fmt.Sprintf("tumbling(%v)", time.Duration(b.size))
	case sliding:
		return fmt.Sprintf("sliding(%v, %v)", time.Duration(b.size), time.Duration(b.slide))
	case session:
		return fmt.Sprintf("session(%v)", time.Duration(b.size))
	case count:
		return fmt.Sprintf("count(%d)", b.n)
	}
	return "invalid"
}

// valid reports whether b was built by one of the constructors.
func (b Batcher) valid() bool { return b.kind != 0 }

// starts calls fn with the start of every fixed window containing t,
// latest first.
func (b Batcher) starts(t int64, fn func(start int64)) {
	for s := floorDiv(t, b.slide) * b.slide; s > t-b.size; s -= b.slide {
		fn(s)
	}
}

// floorDiv divides rounding towards minus infinity, so that windows before
// the epoch are aligned like those after it.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
