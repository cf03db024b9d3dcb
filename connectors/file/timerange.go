package file

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/sensorstorm/sensorstorm/particle"
)

// Limits of TimeRange's scan.
const (
	scanBytes   = 64 << 10 // bytes read at each end of the file
	scanRecords = 1000     // records read at the start for the first particle
)

// ErrNoTimeRange reports a file whose time range TimeRange cannot tell
// cheaply: a gzip file, which cannot be read from its end, or one without
// a particle near either end.
var ErrNoTimeRange = errors.New("file: time range unknown")

// TimeRange returns the event times of the first particle of the file at
// path and the latest particle among its last 64 KiB, in format f,
// reading only the start and the end of the file: a recording's span,
// for progress, without reading it through. A recording out of order near
// its ends gives an approximate span.
func TimeRange(path string, f Format) (first, last int64, err error) {
	if strings.HasSuffix(path, ".gz") {
		return 0, 0, ErrNoTimeRange
	}
	file, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return 0, 0, err
	}

	head := bufio.NewReaderSize(file, scanBytes)
	var header []byte
	if f.Syntax == Delimited && f.Delimited.Header {
		// The tail is read as a file of its own, under the header.
		if header, err = head.ReadSlice('\n'); err != nil {
			return 0, 0, ErrNoTimeRange
		}
		header = bytes.Clone(header)
	}
	first, ok := scanTimes(io.MultiReader(bytes.NewReader(header), head), path, f, scanRecords, false)
	if !ok {
		return 0, 0, ErrNoTimeRange
	}

	start := max(st.Size()-scanBytes, 0)
	tail := make([]byte, st.Size()-start)
	if _, err := file.ReadAt(tail, start); err != nil && err != io.EOF {
		return 0, 0, err
	}
	if start > 0 {
		// The first line of the tail is most likely cut.
		i := bytes.IndexByte(tail, '\n')
		if i < 0 {
			return 0, 0, ErrNoTimeRange
		}
		tail = tail[i+1:]
	}
	if start == 0 {
		header = nil // the tail is the whole file, header included
	}
	last, ok = scanTimes(io.MultiReader(bytes.NewReader(header), bytes.NewReader(tail)), path, f, -1, true)
	if !ok {
		return 0, 0, ErrNoTimeRange
	}
	return first, max(first, last), nil
}

// scanTimes reads r in format f and returns the time of its first
// particle within limit records (no limit if negative), or with latest
// the highest time of all.
func scanTimes(r io.Reader, source string, f Format, limit int, latest bool) (int64, bool) {
	rd, err := NewReader(r, source, f)
	if err != nil {
		return 0, false
	}
	var p particle.Particle
	var t int64
	found := false
	for n := 0; limit < 0 || n < limit; n++ {
		err := rd.Read(&p)
		var de *particle.DecodeError
		switch {
		case errors.As(err, &de):
			continue
		case err != nil:
			return t, found
		}
		if !latest {
			return p.Time, true
		}
		if !found || p.Time > t {
			t = p.Time
		}
		found = true
	}
	return t, found
}
