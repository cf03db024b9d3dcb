package spool

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
)

// A segment is a sequence of frames:
//
//	length uint32 LE | crc32c(body) uint32 LE | body
//
// where body is a kind byte and its payload: for kindData the record's
// sequence number (uint64 LE) and the record; for kindMarks runs of
// completed sequence numbers, each as uvarint start and uvarint length.
// The frames may be followed by zeros, up to the end of the file: space
// preallocated for the next frames.
const (
	headerLen = 8
	kindData  = 'D'
	kindMarks = 'C'
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	errTorn     = errors.New("truncated frame")
	errChecksum = errors.New("checksum mismatch")
	errFrame    = errors.New("malformed frame")
)

func appendData(b []byte, seq uint64, data []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, headerLen)...)
	b = append(b, kindData)
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = append(b, data...)
	return seal(b, start)
}

// appendMarks encodes seqs, which it sorts, as runs.
func appendMarks(b []byte, seqs []uint64) []byte {
	if len(seqs) == 0 {
		return b
	}
	slices.Sort(seqs)
	start := len(b)
	b = append(b, make([]byte, headerLen)...)
	b = append(b, kindMarks)
	for i := 0; i < len(seqs); {
		j := i + 1
		for j < len(seqs) && seqs[j] <= seqs[j-1]+1 {
			j++
		}
		b = binary.AppendUvarint(b, seqs[i])
		b = binary.AppendUvarint(b, seqs[j-1]-seqs[i]+1)
		i = j
	}
	return seal(b, start)
}

func seal(b []byte, start int) []byte {
	body := b[start+headerLen:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(body, castagnoli))
	return b
}

// preallocated reports whether b holds zeros only: space zero-filled
// ahead of the frames (see Config.Preallocate), or nothing. No frame
// starts with a zero header, since a frame's body is never empty.
func preallocated(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// nextFrame splits the frame at the start of b. It returns the body and
// the frame's length, or an error if b does not start with a whole, intact
// frame.
func nextFrame(b []byte) (body []byte, n int, err error) {
	if len(b) < headerLen {
		return nil, 0, errTorn
	}
	l := binary.LittleEndian.Uint32(b)
	if uint64(l) > uint64(len(b)-headerLen) {
		return nil, 0, errTorn
	}
	body = b[headerLen : headerLen+int(l)]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, errChecksum
	}
	if len(body) == 0 || (body[0] == kindData && len(body) < 9) || (body[0] != kindData && body[0] != kindMarks) {
		return nil, 0, errFrame
	}
	return body, headerLen + int(l), nil
}

// eachMark calls fn for every run of a marks body.
func eachMark(body []byte, fn func(start, n uint64)) error {
	p := body[1:]
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
