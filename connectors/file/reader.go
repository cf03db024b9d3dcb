package file

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/sensorstorm/sensorstorm/particle"
)

// decoder is the syntax-specific part of a Reader.
type decoder interface {
	decode(p *particle.Particle) error
	line() int
	raw() []byte
	skips() int
}

// Reader reads the records of one recording as particles, one at a time:
// a file streams through it and is never held in memory whole.
//
// A Reader is not safe for concurrent use, except for Offset.
type Reader struct {
	source string
	dec    decoder
	count  *countingReader
	size   int64
	close  func() error
}

// OpenReader opens the file at path for reading in format f, through gzip
// when the name ends in ".gz". Close the Reader when done.
func OpenReader(path string, f Format) (*Reader, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	s, err := OpenStream(path)
	if err != nil {
		return nil, err
	}
	rd, err := NewReader(s, path, f)
	if err != nil {
		s.Close()
		return nil, err
	}
	rd.count, rd.size, rd.close = s.count, s.size, s.Close
	return rd, nil
}

// Stream is the text of a recording, read through gzip when its name ends
// in ".gz", undecoded: for a reader that decodes it its own way, such as
// in blocks, in parallel. Close it when done.
type Stream struct {
	r     io.Reader
	count *countingReader
	size  int64
	close func() error
}

// OpenStream opens the file at path as OpenReader does, without decoding
// it.
func OpenStream(path string) (*Stream, error) {
	s := &Stream{count: &countingReader{}}
	r, closeFn, err := open(path, func(file *os.File) io.Reader {
		if st, err := file.Stat(); err == nil {
			s.size = st.Size()
		}
		s.count.r = file
		return s.count
	})
	if err != nil {
		return nil, err
	}
	s.r, s.close = r, closeFn
	return s, nil
}

// Read reads the text, decompressed.
func (s *Stream) Read(p []byte) (int, error) { return s.r.Read(p) }

// Offset returns how many bytes of the file (compressed bytes for gzip)
// were read so far, as Reader.Offset does. It is safe to call
// concurrently with Read.
func (s *Stream) Offset() int64 { return s.count.n.Load() }

// Size returns the size of the file.
func (s *Stream) Size() int64 { return s.size }

// Close closes the file.
func (s *Stream) Close() error { return s.close() }

// NewReader returns a Reader of the records in r, in format f. The source
// names r in errors.
func NewReader(r io.Reader, source string, f Format) (*Reader, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	rd := &Reader{source: source}
	if f.Syntax == Delimited {
		d, err := newDelimitedDecoder(r, source, f.Delimited, f.maxLineLength())
		if err != nil {
			return nil, err
		}
		rd.dec = d
		return rd, nil
	}
	d, err := particle.NewDecoder(r, source, f.decoderConfig())
	if err != nil {
		return nil, err
	}
	rd.dec = lpDecoder{d: d, source: source}
	return rd, nil
}

// Read reads the next record into *p. It returns io.EOF at the end of the
// input; a *particle.DecodeError naming the source, line and (where known)
// column of a malformed record, after which Read may be called again and
// goes on with the next record; any other error is final and names the
// source and the line where the input broke off (a truncated gzip file,
// for example). *p is only written when the error is nil. A record that
// line protocol cannot hold (see particle.CheckEncodable) is malformed:
// its output could not be written.
//
// Decoded particles are independent of the Reader and stay valid, but
// they may share memory with each other and must be treated as read-only.
func (r *Reader) Read(p *particle.Particle) error {
	var q particle.Particle
	if err := r.dec.decode(&q); err != nil {
		return err
	}
	if err := particle.CheckEncodable(&q); err != nil {
		return &particle.DecodeError{Source: r.source, Line: r.Line(), Err: err}
	}
	*p = q
	return nil
}

// Source returns the name of the input, as given to NewReader or
// OpenReader.
func (r *Reader) Source() string { return r.source }

// Line returns the number of the line of the record or error that Read
// returned last.
func (r *Reader) Line() int { return r.dec.line() }

// Raw returns the text of the line that Read returned last, without its
// line ending: the input of a malformed record, for a dead letter. It is
// cut at 64 KiB. It is valid until the next Read.
func (r *Reader) Raw() []byte { return r.dec.raw() }

// Skipped returns how many records were left out because every one of
// their values was missing (see DelimitedConfig.Missing). They are records
// read, neither emitted nor malformed.
func (r *Reader) Skipped() int { return r.dec.skips() }

// Offset returns how many bytes of the file (compressed bytes for gzip)
// were read so far: a measure of progress against Size. It is 0 for a
// Reader made by NewReader. It is safe to call concurrently with Read.
func (r *Reader) Offset() int64 {
	if r.count == nil {
		return 0
	}
	return r.count.n.Load()
}

// Size returns the size of the file, or 0 for a Reader made by NewReader.
func (r *Reader) Size() int64 { return r.size }

// Close closes the file of a Reader made by OpenReader.
func (r *Reader) Close() error {
	if r.close == nil {
		return nil
	}
	err := r.close()
	r.close = nil
	return err
}

// lpDecoder reads line protocol.
type lpDecoder struct {
	d      *particle.Decoder
	source string
}

func (l lpDecoder) decode(p *particle.Particle) error {
	err := l.d.Decode(p)
	if err == nil || err == io.EOF {
		return err
	}
	var de *particle.DecodeError
	if errors.As(err, &de) {
		return err
	}
	return readError(l.source, l.d.Line(), err)
}

// readError reports a read error of the input named source, which broke
// off at line.
func readError(source string, line int, err error) error {
	return &ReadError{Source: source, Line: line, Err: err}
}

// ReadError reports a failure to read an input, which ends it: an I/O
// error, or a truncated gzip file.
type ReadError struct {
	// Source names the input.
	Source string
	// Line is the line where the input broke off.
	Line int
	// Err is the cause.
	Err error
}

// Error returns "file: read <source>: line <line>: <cause>".
func (e *ReadError) Error() string {
	return fmt.Sprintf("file: read %s: line %d: %v", e.Source, e.Line, e.Err)
}

// Unwrap returns e.Err.
func (e *ReadError) Unwrap() error { return e.Err }

func (l lpDecoder) line() int   { return l.d.Line() }
func (l lpDecoder) raw() []byte { return l.d.Raw() }
func (l lpDecoder) skips() int  { return 0 }

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}
