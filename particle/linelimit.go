package particle

import (
	"bytes"
	"io"
)

// LimitLines returns a reader of r in which every line longer than limit
// bytes (not counting its line feed) is cut to its first limit+1 bytes: the
// rest of the line, up to its line feed, is read and dropped as it comes,
// never held. A line reader with the same maximum, such as a Decoder,
// then sees the line as too long and reports it, with its prefix and its
// line number intact, while the memory it needs stays about limit bytes
// however long the line in r is. A line without end (/dev/zero) keeps a
// Read dropping until r ends.
func LimitLines(r io.Reader, limit int) io.Reader {
	return &lineLimiter{r: r, max: limit}
}

// lineLimiter is the reader LimitLines returns.
type lineLimiter struct {
	r   io.Reader
	max int
	col int // bytes of the current line passed on, at most max+1
}

// Read implements io.Reader. A read whose bytes are all dropped is
// followed by another, so that dropping is not taken for a reader that
// makes no progress.
func (l *lineLimiter) Read(p []byte) (int, error) {
	for {
		n, err := l.r.Read(p)
		if n == 0 || err != nil {
			return l.cut(p[:n]), err
		}
		if n = l.cut(p[:n]); n > 0 {
			return n, nil
		}
	}
}

// cut removes from b, in place, the bytes of lines beyond their first
// max+1, and returns the length of what is left.
func (l *lineLimiter) cut(b []byte) int {
	if l.col+len(b) <= l.max {
		// No line in b can be too long: only the column moves.
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			l.col = len(b) - i - 1
		} else {
			l.col += len(b)
		}
		return len(b)
	}
	w := 0
	for r := 0; r < len(b); {
		end, nl := len(b), false
		if i := bytes.IndexByte(b[r:], '\n'); i >= 0 {
			end, nl = r+i, true
		}
		take := min(end-r, l.max+1-l.col)
		if w != r {
			copy(b[w:], b[r:r+take])
		}
		w += take
		l.col += take
		r = end
		if nl {
			b[w] = '\n'
			w, r, l.col = w+1, r+1, 0
		}
	}
	return w
}
