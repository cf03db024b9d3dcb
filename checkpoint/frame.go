package checkpoint

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// A file is a header (magic, version, kind) and chunks of at most
// maxChunk bytes, each preceded by its length and CRC-32C, then an empty
// chunk whose checksum field holds the CRC-32C of the total length, so
// that a file cut at a chunk boundary is refused too.
const (
	magic      = "SSCK"
	version    = 1
	headerLen  = len(magic) + 2
	chunkHead  = 8
	maxChunk   = 1 << 20
	kindSnap   = 'S'
	kindManif  = 'M'
	tempSuffix = ".tmp"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// writeFile writes data to path in chunks: to a temporary file, fsync'd,
// then renamed into place. The caller fsyncs the directory.
func writeFile(path string, kind byte, data []byte) error {
	return writeFileSync(path, kind, data, true)
}

// writeFileSync is writeFile, leaving the fsync to the caller when sync is
// false (see syncFiles).
func writeFileSync(path string, kind byte, data []byte, sync bool) (err error) {
	tmp := path + tempSuffix
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 64<<10)
	w.WriteString(magic)
	w.WriteByte(version)
	w.WriteByte(kind)
	var head [chunkHead]byte
	for rest := data; len(rest) > 0; {
		c := rest[:min(len(rest), maxChunk)]
		rest = rest[len(c):]
		binary.LittleEndian.PutUint32(head[:4], uint32(len(c)))
		binary.LittleEndian.PutUint32(head[4:], crc32.Checksum(c, castagnoli))
		w.Write(head[:])
		w.Write(c)
	}
	binary.LittleEndian.PutUint32(head[:4], 0)
	binary.LittleEndian.PutUint32(head[4:], totalSum(len(data)))
	w.Write(head[:])
	if err := w.Flush(); err != nil { // bufio keeps the first write error
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func totalSum(n int) uint32 {
	return crc32.Checksum(binary.LittleEndian.AppendUint64(nil, uint64(n)), castagnoli)
}

// readFile reads and checks a file written by writeFile, returning its
// data, or a *CorruptError.
func readFile(path string, kind byte) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &CorruptError{File: path, Err: fs.ErrNotExist}
	}
	if err != nil {
		return nil, err
	}
	corrupt := func(off int, err error) error {
		return &CorruptError{File: path, Offset: int64(off), Err: err}
	}
	if len(b) < headerLen {
		return nil, corrupt(len(b), io.ErrUnexpectedEOF)
	}
	if string(b[:len(magic)]) != magic || b[len(magic)] != version || b[len(magic)+1] != kind {
		return nil, corrupt(0, fmt.Errorf("%w: header %q", ErrFormat, b[:headerLen]))
	}
	// The chunks are moved down over their headers: no copy of the file.
	data := b[:0]
	for off := headerLen; ; {
		if len(b)-off < chunkHead {
			return nil, corrupt(off, io.ErrUnexpectedEOF)
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		sum := binary.LittleEndian.Uint32(b[off+4:])
		if n == 0 {
			if sum != totalSum(len(data)) {
				return nil, corrupt(off, fmt.Errorf("%w: end of %d bytes", ErrChecksum, len(data)))
			}
			if end := off + chunkHead; end != len(b) {
				return nil, corrupt(end, fmt.Errorf("%w: bytes past the end", ErrFormat))
			}
			return data, nil
		}
		if n > maxChunk {
			return nil, corrupt(off, fmt.Errorf("%w: chunk of %d bytes", ErrFormat, n))
		}
		if len(b)-off-chunkHead < n {
			return nil, corrupt(off, io.ErrUnexpectedEOF)
		}
		c := b[off+chunkHead : off+chunkHead+n]
		if crc32.Checksum(c, castagnoli) != sum {
			return nil, corrupt(off, ErrChecksum)
		}
		data = append(data, c...)
		off += chunkHead + n
	}
}

// fileOffset returns the offset in a file of byte off of its data.
func fileOffset(off int) int64 {
	return int64(headerLen + chunkHead*(1+off/maxChunk) + off)
}

// syncDir fsyncs a directory, so that the renames and creations in it are
// durable, where the system allows it (see syncdir_*.go).
func syncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !dirSyncUnsupported(err) {
		return err
	}
	return nil
}
