package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// The file ENDS records the two ends of the log, which no segment can
// tell: first, the first record of the oldest segment, so that Open
// notices segments missing at the start; durable, the sequence number
// below which a Sync acknowledged every record, so that it notices a
// newest segment missing or cut below what was acknowledged.
//
// Each Sync that writes records stores durable once its fdatasync
// returned, without flushing ENDS: a write to the page cache, which a
// killed process does not lose. A rotation, a compaction, Open and Close
// flush it. So after the machine itself died, durable may lag what was
// acknowledged, by what the kernel had not yet written back (on Linux
// some 30 s at most), and a cut of those last records goes unnoticed; it
// never runs ahead, since it is stored after the records are durable, so
// it raises no false alarm.
//
// ENDS holds two slots, a sector apart so that a torn write spoils one at
// most, written in turn; Open takes the intact one stored last:
//
//	magic uint32 LE | crc32c(the rest) uint32 LE | generation, first, durable uint64 LE
const (
	endsName   = "ENDS"
	endsMagic  = 0x53444e45 // "ENDS" in little-endian byte order
	slotLen    = 32
	slotStride = 512
)

var (
	errHeadMissing = errors.New("segments missing at the start of the log")
	errTailCut     = errors.New("log cut below what a Sync acknowledged")
	errEnds        = errors.New("ENDS unreadable")
)

// ends are the two ends of the log, as ENDS records them.
type ends struct{ first, durable uint64 }

// endsFile is the open ENDS file. The writer lock is held to use it.
type endsFile struct {
	f     *os.File
	gen   uint64
	saved ends
}

// readEnds reads dir's ENDS: ok is false if there is none; an error
// wrapping errEnds if no slot is intact.
func readEnds(dir string) (e ends, gen uint64, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, endsName))
	if errors.Is(err, os.ErrNotExist) {
		return ends{}, 0, false, nil
	}
	if err != nil {
		return ends{}, 0, false, fmt.Errorf("spool: %w", err)
	}
	for off := 0; off+slotLen <= len(b); off += slotStride {
		s := b[off : off+slotLen]
		if binary.LittleEndian.Uint32(s) != endsMagic || binary.LittleEndian.Uint32(s[4:]) != crc32.Checksum(s[8:], castagnoli) {
			continue
		}
		if g := binary.LittleEndian.Uint64(s[8:]); !ok || g > gen {
			gen, ok = g, true
			e = ends{binary.LittleEndian.Uint64(s[16:]), binary.LittleEndian.Uint64(s[24:])}
		}
	}
	if !ok {
		return ends{}, 0, false, fmt.Errorf("%w: no intact slot in %d bytes", errEnds, len(b))
	}
	return e, gen, true, nil
}

func encodeSlot(gen uint64, e ends) []byte {
	b := make([]byte, slotLen)
	binary.LittleEndian.PutUint32(b, endsMagic)
	binary.LittleEndian.PutUint64(b[8:], gen)
	binary.LittleEndian.PutUint64(b[16:], e.first)
	binary.LittleEndian.PutUint64(b[24:], e.durable)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b
}

// openEnds opens dir's ENDS, whose last generation is gen, and flushes e
// to it. When ENDS is missing (found false) or unreadable, it writes a new
// one aside and renames it into place, so that ENDS is never found half
// written.
func openEnds(dir string, found bool, gen uint64, e ends) (*endsFile, error) {
	path := filepath.Join(dir, endsName)
	if found {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		w := &endsFile{f: f, gen: gen}
		if err := w.store(e, true); err != nil {
			f.Close()
			return nil, fmt.Errorf("spool: %w", err)
		}
		return w, nil
	}
	b := make([]byte, slotStride+slotLen)
	copy(b, encodeSlot(0, e))
	copy(b[slotStride:], encodeSlot(1, e))
	tmp := path + ".tmp"
	if err := writeSynced(tmp, b); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return &endsFile{f: f, gen: 1, saved: e}, nil
}

// store writes e to the slot not written last, unless it is what that
// holds, and, if flush, flushes it.
func (w *endsFile) store(e ends, flush bool) error {
	if e != w.saved {
		w.gen++
		if _, err := w.f.WriteAt(encodeSlot(w.gen, e), int64(w.gen%2)*slotStride); err != nil {
			return fmt.Errorf("store ends: %w", err)
		}
		w.saved = e
	}
	if flush {
		if err := datasync(w.f); err != nil {
			return fmt.Errorf("flush ends: %w", err)
		}
	}
	return nil
}

// writeSynced creates the file path with the content b and flushes it.
func writeSynced(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}
