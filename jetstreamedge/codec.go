package jetstreamedge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// The wire format of one message, version 2. Integers are varints
// (zigzag for signed ones), but for the stamp: the sender and the number,
// 8 bytes each, little endian, at fixed offsets so that a number can be
// set once the message is encoded and a receiver can read the stamp
// without decoding the rest. A string is a reference into the message's
// string table: uvarint 2*i+1 for the i-th string seen, or 2*n followed
// by n new bytes, which become the next entry. So a tag key, a field key
// or a sensor id costs its bytes once per message and a byte or two after.
//
//	message  = version sender number input flags high promise count item*
//	item     = iflags time-delta [origin] [seq-delta] [high-delta] body
//	body     = meta-type meta-payload | [measurement] ntags (key value)* nfields (key kind value)*
//
// time-delta is against the previous item's time (0 for the first);
// origin is omitted when equal to the previous item's; seq-delta is
// against the previous item's sequence, omitted when it is one more;
// high-delta is high minus time, omitted when zero; the measurement is
// omitted when equal to the previous data item's.
const version = 2

// Offsets of the stamp in a message, and the length of its fixed head.
const (
	senderAt = 1
	numberAt = senderAt + 8
	headLen  = numberAt + 8
)

// stamp tells a receiver where a message comes from and in which order:
// the outlet that sent it (a random number, new with every outlet) and
// the message's number among that outlet's, from 1.
type stamp struct {
	sender, number uint64
}

// readStamp returns the stamp of a message.
func readStamp(data []byte) (stamp, error) {
	if len(data) < headLen || data[0] != version {
		return stamp{}, fmt.Errorf("%w: no version %d head", ErrMalformed, version)
	}
	return stamp{sender: binary.LittleEndian.Uint64(data[senderAt:]), number: binary.LittleEndian.Uint64(data[numberAt:])}, nil
}

// setNumber numbers an encoded message.
func setNumber(data []byte, number uint64) {
	binary.LittleEndian.PutUint64(data[numberAt:], number)
}

// message flags
const (
	msgDrained = 1 << iota
	msgEOS
)

// item flags
const (
	itemMeta = 1 << iota
	itemReplay
	itemSameOrigin
	itemNextSeq
	itemHighIsTime
	itemSameMeasurement
)

// ErrMalformed is the error of a message that does not decode.
var ErrMalformed = errors.New("jetstreamedge: malformed message")

// ErrServerTooOld is returned by New when the NATS server predates
// priority groups (2.11), which pin each instance's consumer to one
// worker.
var ErrServerTooOld = errors.New("jetstreamedge: NATS server 2.11 or later is needed (priority groups)")

// ErrPublishFailed is the error of a batch the server did not confirm
// within Config.RetryFor.
var ErrPublishFailed = errors.New("jetstreamedge: publish failed")

// UnknownMetaError is the error of a meta particle the wire format cannot
// carry: only the built-ins of package metaparticle cross processes.
type UnknownMetaError struct{ Type string }

func (e *UnknownMetaError) Error() string {
	return fmt.Sprintf("jetstreamedge: meta particle %q cannot cross processes", e.Type)
}

// encoder appends messages. Its string table lives for one message.
type encoder struct {
	strings map[string]uint64
}

// appendBatch appends the encoding of b, stamped with st, to dst.
func (e *encoder) appendBatch(dst []byte, st stamp, b *topology.RemoteBatch) ([]byte, error) {
	if e.strings == nil {
		e.strings = map[string]uint64{}
	}
	clear(e.strings)
	var flags byte
	if b.Drained {
		flags |= msgDrained
	}
	if b.EOS {
		flags |= msgEOS
	}
	dst = append(dst, version)
	dst = binary.LittleEndian.AppendUint64(dst, st.sender)
	dst = binary.LittleEndian.AppendUint64(dst, st.number)
	dst = binary.AppendUvarint(dst, uint64(b.Input))
	dst = append(dst, flags)
	dst = binary.AppendVarint(dst, b.High)
	dst = binary.AppendVarint(dst, b.Promise)
	dst = binary.AppendUvarint(dst, uint64(len(b.Items)))
	var (
		prev        particle.Particle
		measurement string
		haveMeas    bool
	)
	for i := range b.Items {
		it := &b.Items[i]
		p := &it.Particle
		var f byte
		if p.Meta != nil {
			f |= itemMeta
		}
		if it.Replay {
			f |= itemReplay
		}
		if i > 0 && p.Origin == prev.Origin {
			f |= itemSameOrigin
		}
		if i > 0 && p.Seq == prev.Seq+1 {
			f |= itemNextSeq
		}
		if it.High == p.Time {
			f |= itemHighIsTime
		}
		if p.Meta == nil && haveMeas && p.Measurement == measurement {
			f |= itemSameMeasurement
		}
		dst = append(dst, f)
		dst = binary.AppendVarint(dst, p.Time-prev.Time)
		if f&itemSameOrigin == 0 {
			dst = binary.AppendUvarint(dst, uint64(p.Origin))
		}
		if f&itemNextSeq == 0 {
			dst = binary.AppendVarint(dst, int64(p.Seq-prev.Seq))
		}
		if f&itemHighIsTime == 0 {
			dst = binary.AppendVarint(dst, it.High-p.Time)
		}
		var err error
		if p.Meta != nil {
			dst, err = e.appendMeta(dst, p.Meta)
			if err != nil {
				return nil, err
			}
		} else {
			if f&itemSameMeasurement == 0 {
				dst = e.appendString(dst, p.Measurement)
				measurement, haveMeas = p.Measurement, true
			}
			dst = e.appendData(dst, p)
		}
		prev = *p
	}
	return dst, nil
}

func (e *encoder) appendData(dst []byte, p *particle.Particle) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p.Tags)))
	for _, t := range p.Tags {
		dst = e.appendString(dst, t.Key)
		dst = e.appendString(dst, t.Value)
	}
	dst = binary.AppendUvarint(dst, uint64(len(p.Fields)))
	for _, f := range p.Fields {
		dst = e.appendString(dst, f.Key)
		dst = append(dst, byte(f.Value.Kind()))
		switch f.Value.Kind() {
		case particle.KindFloat:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f.Value.FloatValue()))
		case particle.KindInt:
			dst = binary.AppendVarint(dst, f.Value.IntValue())
		case particle.KindUint:
			dst = binary.AppendUvarint(dst, f.Value.UintValue())
		case particle.KindString:
			dst = e.appendString(dst, f.Value.StringValue())
		case particle.KindBool:
			b := byte(0)
			if f.Value.BoolValue() {
				b = 1
			}
			dst = append(dst, b)
		}
	}
	return dst
}

func (e *encoder) appendMeta(dst []byte, m particle.Meta) ([]byte, error) {
	switch m := m.(type) {
	case metaparticle.Tick:
		dst = e.appendString(dst, m.MetaType())
		return append(dst, byte(m.Domain)), nil
	case metaparticle.SpeedChange:
		dst = e.appendString(dst, m.MetaType())
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(m.Speed))
		paused := byte(0)
		if m.Paused {
			paused = 1
		}
		return append(dst, paused), nil
	}
	return nil, &UnknownMetaError{Type: m.MetaType()}
}

func (e *encoder) appendString(dst []byte, s string) []byte {
	if i, ok := e.strings[s]; ok {
		return binary.AppendUvarint(dst, 2*i+1)
	}
	e.strings[s] = uint64(len(e.strings))
	dst = binary.AppendUvarint(dst, 2*uint64(len(s)))
	return append(dst, s...)
}

// decoder reads one message. The strings it returns are shared by the
// particles of the message.
type decoder struct {
	data    []byte
	strings []string
	err     error
}

// decodeBatch decodes data into b, reusing b's items, and returns its
// stamp.
func decodeBatch(data []byte, b *topology.RemoteBatch) (stamp, error) {
	st, err := readStamp(data)
	if err != nil {
		return stamp{}, err
	}
	d := decoder{data: data[headLen:]}
	input := d.uvarint()
	flags := d.byte()
	*b = topology.RemoteBatch{
		Input: int(input), High: d.varint(), Promise: d.varint(), Items: b.Items[:0],
		Drained: flags&msgDrained != 0, EOS: flags&msgEOS != 0,
	}
	n := d.uvarint()
	if d.err == nil && (input > math.MaxInt32 || n > uint64(len(d.data))) {
		// Every item takes at least a byte.
		d.fail("count %d or input %d out of range", n, input)
	}
	var (
		prev        particle.Particle
		measurement string
	)
	for i := uint64(0); i < n && d.err == nil; i++ {
		f := d.byte()
		p := particle.Particle{Time: prev.Time + d.varint(), Origin: prev.Origin, Seq: prev.Seq + 1}
		if f&itemSameOrigin == 0 {
			o := d.uvarint()
			if o > math.MaxUint32 {
				d.fail("origin %d", o)
			}
			p.Origin = uint32(o)
		}
		if f&itemNextSeq == 0 {
			p.Seq = prev.Seq + uint64(d.varint())
		}
		high := p.Time
		if f&itemHighIsTime == 0 {
			high += d.varint()
		}
		if f&itemMeta != 0 {
			p.Meta = d.meta()
		} else {
			if f&itemSameMeasurement == 0 {
				measurement = d.string()
			}
			p.Measurement = measurement
			d.readData(&p)
		}
		b.Items = append(b.Items, topology.RemoteItem{Particle: p, High: high, Replay: f&itemReplay != 0})
		prev = p
	}
	if d.err == nil && len(d.data) > 0 {
		d.fail("%d bytes after the last item", len(d.data))
	}
	return st, d.err
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
	d.data = nil
}

func (d *decoder) byte() byte {
	if len(d.data) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.data[0]
	d.data = d.data[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.data)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.data = d.data[n:]
	return v
}

// varint reads a zigzag varint, as binary.AppendVarint writes it.
func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) fixed64() uint64 {
	if len(d.data) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.data)
	d.data = d.data[8:]
	return v
}

func (d *decoder) string() string {
	x := d.uvarint()
	if x&1 == 1 {
		i := x >> 1
		if i >= uint64(len(d.strings)) {
			d.fail("string reference %d of %d", i, len(d.strings))
			return ""
		}
		return d.strings[i]
	}
	n := x >> 1
	if n > uint64(len(d.data)) {
		d.fail("string of %d bytes, %d left", n, len(d.data))
		return ""
	}
	s := string(d.data[:n])
	d.data = d.data[n:]
	d.strings = append(d.strings, s)
	return s
}

// count reads a count of things that take at least two bytes each.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.data))/2 {
		d.fail("count %d, %d bytes left", n, len(d.data))
		return 0
	}
	return int(n)
}

func (d *decoder) readData(p *particle.Particle) {
	if n := d.count(); n > 0 {
		p.Tags = make([]particle.Tag, n)
		for i := range p.Tags {
			p.Tags[i] = particle.Tag{Key: d.string(), Value: d.string()}
		}
	}
	if n := d.count(); n > 0 {
		p.Fields = make([]particle.Field, n)
		for i := range p.Fields {
			p.Fields[i].Key = d.string()
			p.Fields[i].Value = d.value()
		}
	}
}

func (d *decoder) value() particle.Value {
	switch k := particle.ValueKind(d.byte()); k {
	case particle.KindFloat:
		return particle.Float(math.Float64frombits(d.fixed64()))
	case particle.KindInt:
		return particle.Int(d.varint())
	case particle.KindUint:
		return particle.Uint(d.uvarint())
	case particle.KindString:
		return particle.String(d.string())
	case particle.KindBool:
		return particle.Bool(d.byte() != 0)
	default:
		d.fail("value kind %d", k)
		return particle.Value{}
	}
}

func (d *decoder) meta() particle.Meta {
	switch t := d.string(); t {
	case metaparticle.Tick{}.MetaType():
		return metaparticle.Tick{Domain: metaparticle.Domain(d.byte())}
	case metaparticle.SpeedChange{}.MetaType():
		return metaparticle.SpeedChange{Speed: math.Float64frombits(d.fixed64()), Paused: d.byte() != 0}
	default:
		if d.err == nil {
			d.fail("meta type %q", t)
		}
		return nil
	}
}
