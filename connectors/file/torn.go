package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
)

// tornChunk is how much of a file's end cutTornLine reads at a time.
const tornChunk = 64 << 10

// cutTornLine truncates f after its last newline when its last line has
// none: a write cut short by a crash or a full disk left it, and the lines
// appended next would run into it. It logs what it cut.
func cutTornLine(f *os.File, logger *slog.Logger) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("file: %w", err)
	}
	size := fi.Size()
	if size == 0 || !fi.Mode().IsRegular() {
		return nil
	}
	end, err := lineEnd(f, size)
	if err != nil {
		return fmt.Errorf("file: find the last line of %s: %w", f.Name(), err)
	}
	if end == size {
		return nil
	}
	torn := make([]byte, min(size-end, 200))
	if _, err := f.ReadAt(torn, end); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("file: read the torn line of %s: %w", f.Name(), err)
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("file: cut the torn line of %s: %w", f.Name(), err)
	}
	logger.Warn("file: cut off a torn last line, left by a write cut short (a crash or a full disk); its input was not acknowledged and comes again",
		"file", f.Name(), "offset", end, "bytes", size-end, "start", string(torn))
	return nil
}

// lineEnd returns the offset just after the last newline of the first size
// bytes of f, or 0 if there is none.
func lineEnd(f *os.File, size int64) (int64, error) {
	buf := make([]byte, min(size, tornChunk))
	for end := size; end > 0; {
		start := max(end-tornChunk, 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}
