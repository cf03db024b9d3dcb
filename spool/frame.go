package spool

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
)

// A segment is a sequence of frames:
//
//	magic uint32 LE | length uint32 LE | crc32c(length, body) uint32 LE | body
//
// where body is a kind byte and its payload:
//
//   - kindData: the record's sequence number (uint64 LE) and the record;
//   - kindCommit: ends the bytes one Sync writes: uvarint the sequence
//     number of the next record, uvarint the length in bytes of the frames
//     the same Sync wrote before it, then runs of completed sequence
//     numbers, each as uvarint start and uvarint length;
//   - kindGap: uvarint a count of sequence numbers without records, which
//     a repair lost (Config.Repair).
//
// The magic lets Open find the next frame after damage; the commit frame
// tells a torn last write (its commit is missing or its bytes damaged:
// Sync never returned, nothing in it was acknowledged) from damage to
// bytes a Sync had made durable. The frames may be followed by zeros, up
// to the end of the file: space preallocated for the next frames.
const (
	headerLen  = 12
	frameMagic = 0x4c415753 // "SWAL" in little-endian byte order
	kindData   = 'D'
	kindCommit = 'C'
	kindGap    = 'G'
)

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	magicBytes = binary.LittleEndian.AppendUint32(nil, frameMagic)
)

var (
	errTorn     = errors.New("truncated frame")
	errMagic    = errors.New("no frame marker")
	errChecksum = errors.New("checksum mismatch")
	errFrame    = errors.New("malformed frame")
	errSequence = errors.New("sequence out of order")
	errMissing  = errors.New("records missing")
)

func appendData(b []byte, seq uint64, data []byte) []byte {
	start := len(b)
	b = appendHeader(b, kindData)
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = append(b, data...)
	return seal(b, start)
}

// appendCommit ends the frames of one Sync, b, with a commit frame: next
// is the sequence number of the next record, runs the records completed,
// which it sorts and encodes as runs, those that touch joined.
func appendCommit(b []byte, next uint64, runs []run) []byte {
	batch := len(b)
	start := len(b)
	b = appendHeader(b, kindCommit)
	b = binary.AppendUvarint(b, next)
	b = binary.AppendUvarint(b, uint64(batch))
	slices.SortFunc(runs, func(x, y run) int { return cmp.Compare(x.start, y.start) })
	for i := 0; i < len(runs); {
		first, end := runs[i].start, runs[i].start+runs[i].n
		for i++; i < len(runs) && runs[i].start <= end; i++ {
			end = max(end, runs[i].start+runs[i].n)
		}
		b = binary.AppendUvarint(b, first)
		b = binary.AppendUvarint(b, end-first)
	}
	return seal(b, start)
}

// run is the records numbered [start, start+n).
type run struct{ start, n uint64 }

func appendGap(b []byte, n uint64) []byte {
	start := len(b)
	b = appendHeader(b, kindGap)
	b = binary.AppendUvarint(b, n)
	return seal(b, start)
}

func appendHeader(b []byte, kind byte) []byte {
	b = append(b, magicBytes...)
	b = append(b, make([]byte, headerLen-len(magicBytes))...)
	return append(b, kind)
}

func seal(b []byte, start int) []byte {
	body := b[start+headerLen:]
	binary.LittleEndian.PutUint32(b[start+4:], uint32(len(body)))
	crc := updateShort(0, b[start+4:start+8])
	binary.LittleEndian.PutUint32(b[start+8:], crc32.Update(crc, castagnoli, body))
	return b
}

// updateShort is crc32.Update with the Castagnoli table for a few bytes,
// a frame's length: a byte at a time costs less than the call that
// dispatches to the vector code, which a drain would pay per record.
func updateShort(crc uint32, p []byte) uint32 {
	crc = ^crc
	for _, v := range p {
		crc = castagnoli[byte(crc)^v] ^ crc>>8
	}
	return ^crc
}

// preallocated reports whether b holds zeros only: space zero-filled
// ahead of the frames (see Config.Preallocate), or nothing. No frame
// starts with a zero byte.
func preallocated(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// frame is the decoded body of an intact frame.
type frame struct {
	kind byte
	// seq is a data frame's sequence number, a commit frame's next one, a
	// gap frame's count.
	seq uint64
	// batch is a commit frame's batch length; data a data frame's record,
	// a commit frame's runs.
	batch uint64
	data  []byte
}

// nextFrame splits the frame at the start of b. It returns the frame and
// its length, or an error if b does not start with a whole, intact frame.
func nextFrame(b []byte) (frame, int, error) {
	if len(b) < headerLen {
		return frame{}, 0, errTorn
	}
	if !bytes.HasPrefix(b, magicBytes) {
		return frame{}, 0, errMagic
	}
	l := binary.LittleEndian.Uint32(b[4:])
	if uint64(l) > uint64(len(b)-headerLen) {
		return frame{}, 0, errTorn
	}
	body := b[headerLen : headerLen+int(l)]
	crc := updateShort(0, b[4:8])
	if crc32.Update(crc, castagnoli, body) != binary.LittleEndian.Uint32(b[8:]) {
		return frame{}, 0, errChecksum
	}
	f, ok := decodeBody(body)
	if !ok {
		return frame{}, 0, errFrame
	}
	return f, headerLen + int(l), nil
}

func decodeBody(body []byte) (frame, bool) {
	if len(body) == 0 {
		return frame{}, false
	}
	f := frame{kind: body[0]}
	p := body[1:]
	switch f.kind {
	case kindData:
		if len(p) < 8 {
			return frame{}, false
		}
		f.seq, f.data = binary.LittleEndian.Uint64(p), p[8:]
		return f, true
	case kindCommit:
		var k, k2 int
		f.seq, k = binary.Uvarint(p)
		if k > 0 {
			f.batch, k2 = binary.Uvarint(p[k:])
		}
		if k <= 0 || k2 <= 0 {
			return frame{}, false
		}
		f.data = p[k+k2:]
		return f, eachMark(f.data, func(uint64, uint64) {}) == nil
	case kindGap:
		var k int
		f.seq, k = binary.Uvarint(p)
		return f, k > 0 && k == len(p)
	}
	return frame{}, false
}

// eachMark calls fn for every run of a commit frame's runs.
func eachMark(p []byte, fn func(start, n uint64)) error {
	for len(p) > 0 {
		start, k := binary.Uvarint(p)
		if k <= 0 {
			return errFrame
		}
		p = p[k:]
		n, k := binary.Uvarint(p)
		if k <= 0 {
			return errFrame
		}
		p = p[k:]
		fn(start, n)
	}
	return nil
}

// resync returns the offset of the first intact frame in b at or after
// from, or len(b) if there is none.
func resync(b []byte, from int) int {
	for from < len(b) {
		i := bytes.Index(b[from:], magicBytes)
		if i < 0 {
			return len(b)
		}
		if _, _, err := nextFrame(b[from+i:]); err == nil {
			return from + i
		}
		from += i + 1
	}
	return len(b)
}
