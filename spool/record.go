package spool

import (
	"encoding/binary"
	"fmt"
)

// Record is the form in which the sources keep an input in the spool:
// where it came from, when it arrived and its bytes, which is what a
// replay after a crash needs to decode it as the first run did (lines
// without a timestamp take the receive time).
type Record struct {
	// Source names the input: an MQTT topic, an HTTP write's path and
	// query.
	Source string
	// Received is the receive time in nanoseconds since the Unix epoch.
	Received int64
	// Payload is the input as received.
	Payload []byte
}

// AppendRecord appends r's encoding to b and returns the extended slice:
// uvarint(len(Source)), Source, Received (8 bytes, little endian),
// Payload.
func AppendRecord(b []byte, r Record) []byte {
	b = binary.AppendUvarint(b, uint64(len(r.Source)))
	b = append(b, r.Source...)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Received))
	return append(b, r.Payload...)
}

// PendingRecords is Pending for a spool of Records: it calls fn with each
// record parsed, and returns an error wrapping ErrBadRecord for one that
// does not parse. r.Payload is valid only during the call.
func (s *Spool) PendingRecords(fn func(seq uint64, r Record) error) error {
	return s.Pending(func(seq uint64, data []byte) error {
		r, ok := ParseRecord(data)
		if !ok {
			return fmt.Errorf("%w: record %d", ErrBadRecord, seq)
		}
		return fn(seq, r)
	})
}

// ParseRecord decodes what AppendRecord wrote, reporting false for bytes
// too short to be a record. The Payload refers to b.
func ParseRecord(b []byte) (Record, bool) {
	source, received, payload, ok := parseRecord(b)
	if !ok {
		return Record{}, false
	}
	return Record{Source: string(source), Received: received, Payload: payload}, true
}

// parseRecord is ParseRecord with the source left in b, for a caller that
// interns it.
func parseRecord(b []byte) (source []byte, received int64, payload []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n+8 {
		return nil, 0, nil, false
	}
	b = b[k:]
	return b[:n], int64(binary.LittleEndian.Uint64(b[n:])), b[n+8:], true
}
