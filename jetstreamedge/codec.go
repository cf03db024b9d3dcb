package jetstreamedge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology/edge"
)

// The wire format of one message, version 4. Integers are varints
// (zigzag for signed ones), but for the stamp: the sender, the number and
// the sender's settled mark, 8 bytes each, little endian, at fixed
// offsets so that the number and mark can be set once the message is
// encoded and a receiver can read the stamp without decoding the rest. A message keeps three tables, each filled as
// it goes: strings, tag sets and field schemas (the keys and kinds of a
// particle's fields, in order). A reference into a table is uvarint 2*i+1
// for its i-th entry, or 2*n followed by the n parts of a new entry,
// which becomes the next one: n bytes for a string, n (key value) string
// references for a tag set, n (key kind) for a schema. So the readings of
// one sensor cost their tag set and field names once per message and a
// byte each after, and the decoder hands them one shared Tags slice.
//
//	message  = version sender number settled input flags high promise count item*
//	item     = iflags time-delta [origin] [seq-delta] [high-delta] body
//	body     = meta-type meta-payload | [measurement] tagset schema value*
//	value    = float | varint | uvarint | string | bool-byte, by the schema's kind
//	float    = decimals zigzag-varint | 0xff 8-bytes-little-endian
//
// time-delta is against the previous item's time (0 for the first);
// origin is omitted when equal to the previous item's; seq-delta is
// against the previous item's sequence, omitted when it is one more;
// high-delta is high minus time, omitted when zero; the measurement is
// omitted when equal to the previous data item's. A float that is an
// integer m over 10^decimals exactly (21.21, as sensors report them) is
// sent as m, in two or three bytes instead of eight.
const version = 4

// Offsets of the stamp in a message, and the length of its fixed head.
const (
	senderAt  = 1
	numberAt  = senderAt + 8
	settledAt = numberAt + 8
	headLen   = settledAt + 8
)

// stamp tells a receiver where a message comes from and in which order:
// the outlet that sent it (a random number, new with every outlet) and
// the message's number among that outlet's, from 1. Settled is the
// sender's settled mark when it numbered the message: the server had
// confirmed every message of the sender numbered below it, so that a
// receiver missing one of those knows it was stored.
type stamp struct {
	sender, number, settled uint64
}

// readStamp returns the stamp of a message.
func readStamp(data []byte) (stamp, error) {
	if len(data) < headLen || data[0] != version {
		return stamp{}, fmt.Errorf("%w: no version %d head", ErrMalformed, version)
	}
	return stamp{
		sender:  binary.LittleEndian.Uint64(data[senderAt:]),
		number:  binary.LittleEndian.Uint64(data[numberAt:]),
		settled: binary.LittleEndian.Uint64(data[settledAt:]),
	}, nil
}

// setStamp numbers an encoded message and sets its settled mark.
func setStamp(data []byte, number, settled uint64) {
	binary.LittleEndian.PutUint64(data[numberAt:], number)
	binary.LittleEndian.PutUint64(data[settledAt:], settled)
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

// Float encodings: up to maxDecimals decimals, or the raw bits.
const (
	maxDecimals = 6
	rawFloat    = 0xff
)

// pow10 holds the powers of ten a decimal float is divided by; each is
// exact in a float64.
var pow10 = [maxDecimals + 1]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6}

// ErrMalformed is the error of a message that does not decode.
var ErrMalformed = errors.New("jetstreamedge: malformed message")

// ErrServerTooOld is returned by New when the NATS server predates
// priority groups (2.11), which pin each instance's consumer to one
// worker.
var ErrServerTooOld = errors.New("jetstreamedge: NATS server 2.11 or later is needed (priority groups)")

// ErrPublishFailed is the error of a batch the server did not confirm
// within Config.RetryFor.
var ErrPublishFailed = errors.New("jetstreamedge: publish failed")

// ErrNoCheckpoints is what an inlet's Run returns when its unit takes no
// checkpoints: give the topology topology.Config.Checkpoints with a
// checkpoint.Partitioned store (cluster.Worker.CheckpointStore).
var ErrNoCheckpoints = errors.New("jetstreamedge: units need checkpoints (topology.Config.Checkpoints) to move between workers")

// UnknownMetaError is the error of a meta particle the wire format cannot
// carry: only the built-ins of package metaparticle cross processes.
type UnknownMetaError struct{ Type string }

func (e *UnknownMetaError) Error() string {
	return fmt.Sprintf("jetstreamedge: meta particle %q cannot cross processes", e.Type)
}

// encoder appends messages. Its tables live for one message; the tag set
// and schema tables are keyed by the bytes of their entries, built in key.
type encoder struct {
	strings map[string]uint64
	tagSets map[string]uint64
	schemas map[string]uint64
	key     []byte
}

// appendBatch appends the encoding of b, stamped with st, to dst.
func (e *encoder) appendBatch(dst []byte, st stamp, b *edge.Batch) ([]byte, error) {
	if e.strings == nil {
		e.strings, e.tagSets, e.schemas = map[string]uint64{}, map[string]uint64{}, map[string]uint64{}
	}
	clear(e.strings)
	clear(e.tagSets)
	clear(e.schemas)
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
	dst = binary.LittleEndian.AppendUint64(dst, st.settled)
	dst = binary.AppendUvarint(dst, uint64(b.Input))
	dst = append(dst, flags)
	dst = binary.AppendVarint(dst, b.High)
	dst = binary.AppendVarint(dst, b.Promise)
	dst = binary.AppendUvarint(dst, uint64(len(b.Items)))
	var (
		prev        *particle.Particle
		measurement string
		haveMeas    bool
	)
	for i := range b.Items {
		it := &b.Items[i]
		p := &it.Particle
		var f byte
		var prevTime int64
		var prevSeq uint64
		if prev != nil {
			prevTime, prevSeq = prev.Time, prev.Seq
			if p.Origin == prev.Origin {
				f |= itemSameOrigin
			}
			if p.Seq == prev.Seq+1 {
				f |= itemNextSeq
			}
		}
		if p.Meta != nil {
			f |= itemMeta
		}
		if it.Replay {
			f |= itemReplay
		}
		if it.High == p.Time {
			f |= itemHighIsTime
		}
		if p.Meta == nil && haveMeas && p.Measurement == measurement {
			f |= itemSameMeasurement
		}
		dst = append(dst, f)
		dst = binary.AppendVarint(dst, p.Time-prevTime)
		if f&itemSameOrigin == 0 {
			dst = binary.AppendUvarint(dst, uint64(p.Origin))
		}
		if f&itemNextSeq == 0 {
			dst = binary.AppendVarint(dst, int64(p.Seq-prevSeq))
		}
		if f&itemHighIsTime == 0 {
			dst = binary.AppendVarint(dst, it.High-p.Time)
		}
		if p.Meta != nil {
			var err error
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
		prev = p
	}
	return dst, nil
}

func (e *encoder) appendData(dst []byte, p *particle.Particle) []byte {
	// The key is built in a local: appending to e.key would cost a write
	// barrier an append while the GC runs.
	key := e.key[:0]
	for _, t := range p.Tags {
		key = binary.AppendUvarint(key, uint64(len(t.Key)))
		key = append(key, t.Key...)
		key = binary.AppendUvarint(key, uint64(len(t.Value)))
		key = append(key, t.Value...)
	}
	dst, isNew := appendRef(dst, e.tagSets, key, len(p.Tags))
	if isNew {
		for _, t := range p.Tags {
			dst = e.appendString(dst, t.Key)
			dst = e.appendString(dst, t.Value)
		}
	}
	key = key[:0]
	for _, f := range p.Fields {
		key = binary.AppendUvarint(key, uint64(len(f.Key)))
		key = append(key, f.Key...)
		key = append(key, byte(f.Value.Kind()))
	}
	e.key = key
	if dst, isNew = appendRef(dst, e.schemas, key, len(p.Fields)); isNew {
		for _, f := range p.Fields {
			dst = e.appendString(dst, f.Key)
			dst = append(dst, byte(f.Value.Kind()))
		}
	}
	for _, f := range p.Fields {
		switch f.Value.Kind() {
		case particle.KindFloat:
			dst = appendFloat(dst, f.Value.FloatValue())
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

// appendRef appends the reference to the entry of table keyed by key, or
// the size n of a new entry, which the caller appends, and reports which.
func appendRef(dst []byte, table map[string]uint64, key []byte, n int) ([]byte, bool) {
	if i, ok := table[string(key)]; ok {
		return binary.AppendUvarint(dst, 2*i+1), false
	}
	table[string(key)] = uint64(len(table))
	return binary.AppendUvarint(dst, 2*uint64(n)), true
}

// appendFloat appends v as a decimal when one reads back as exactly v,
// and as its bits otherwise.
func appendFloat(dst []byte, v float64) []byte {
	bits := math.Float64bits(v)
	for k, p := range pow10 {
		m := math.Round(v * p)
		if !(math.Abs(m) < 1<<53) {
			break
		}
		if math.Float64bits(float64(int64(m))/p) == bits {
			dst = append(dst, byte(k))
			return binary.AppendVarint(dst, int64(m))
		}
	}
	dst = append(dst, rawFloat)
	return binary.LittleEndian.AppendUint64(dst, bits)
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

// schemaField is the key and kind of one field of a schema.
type schemaField struct {
	key  string
	kind particle.ValueKind
}

// decoder reads one message. The strings and tag slices it returns are
// shared by the particles of the message; the fields of its particles
// are cut from a few large slices, with their capacity capped so that
// appending to one copies it.
type decoder struct {
	data    []byte
	strings []string
	tagSets [][]particle.Tag
	schemas [][]schemaField
	fields  []particle.Field
	err     error
}

// decodeBatch decodes data into b, reusing b's items, and returns its
// stamp.
func decodeBatch(data []byte, b *edge.Batch) (stamp, error) {
	st, err := readStamp(data)
	if err != nil {
		return stamp{}, err
	}
	d := decoder{data: data[headLen:]}
	input := d.uvarint()
	flags := d.byte()
	*b = edge.Batch{
		Input: int(input), High: d.varint(), Promise: d.varint(), Items: b.Items[:0],
		Drained: flags&msgDrained != 0, EOS: flags&msgEOS != 0,
	}
	n := d.uvarint()
	if d.err == nil && (input > math.MaxInt32 || n > uint64(len(d.data))) {
		// Every item takes at least a byte.
		d.fail("count %d or input %d out of range", n, input)
	}
	if d.err == nil {
		b.Items = growItems(b.Items, int(n))
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
			d.readData(&p, int(n-i))
		}
		b.Items = append(b.Items, edge.Item{Particle: p, High: high, Replay: f&itemReplay != 0})
		prev = p
	}
	if d.err == nil && len(d.data) > 0 {
		d.fail("%d bytes after the last item", len(d.data))
	}
	return st, d.err
}

// growItems returns items with room for n more.
func growItems(items []edge.Item, n int) []edge.Item {
	if cap(items)-len(items) < n {
		items = append(make([]edge.Item, 0, len(items)+n), items...)
	}
	return items
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
	if len(d.data) > 0 && d.data[0] < 0x80 {
		v := uint64(d.data[0])
		d.data = d.data[1:]
		return v
	}
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

// ref reads a table reference: an index into a table of n entries, or
// the size of a new entry.
func (d *decoder) ref(n int) (i int, isNew bool, size int) {
	x := d.uvarint()
	if x&1 == 1 {
		if x>>1 >= uint64(n) {
			d.fail("reference %d of %d", x>>1, n)
			return 0, false, 0
		}
		return int(x >> 1), false, 0
	}
	if x>>1 > uint64(len(d.data)) {
		// Every part of an entry takes at least a byte.
		d.fail("entry of %d, %d bytes left", x>>1, len(d.data))
		return 0, false, 0
	}
	return 0, true, int(x >> 1)
}

func (d *decoder) string() string {
	i, isNew, n := d.ref(len(d.strings))
	if !isNew {
		if d.err != nil {
			return ""
		}
		return d.strings[i]
	}
	s := string(d.data[:n])
	d.data = d.data[n:]
	d.strings = append(d.strings, s)
	return s
}

func (d *decoder) tagSet() []particle.Tag {
	i, isNew, n := d.ref(len(d.tagSets))
	if !isNew {
		if d.err != nil {
			return nil
		}
		return d.tagSets[i]
	}
	var tags []particle.Tag
	if n > 0 {
		tags = make([]particle.Tag, n)
		for j := range tags {
			tags[j] = particle.Tag{Key: d.string(), Value: d.string()}
		}
	}
	d.tagSets = append(d.tagSets, tags)
	return tags
}

func (d *decoder) schema() []schemaField {
	i, isNew, n := d.ref(len(d.schemas))
	if !isNew {
		if d.err != nil {
			return nil
		}
		return d.schemas[i]
	}
	s := make([]schemaField, n)
	for j := range s {
		s[j].key = d.string()
		s[j].kind = particle.ValueKind(d.byte())
		if s[j].kind < particle.KindFloat || s[j].kind > particle.KindBool {
			d.fail("value kind %d", s[j].kind)
		}
	}
	d.schemas = append(d.schemas, s)
	return s
}

// readData reads the tags and fields of p, one of the left items still
// to read.
func (d *decoder) readData(p *particle.Particle, left int) {
	p.Tags = d.tagSet()
	s := d.schema()
	if len(s) == 0 || d.err != nil {
		return
	}
	if cap(d.fields)-len(d.fields) < len(s) {
		// Room for the items left if they have this schema too; every
		// value takes at least a byte.
		d.fields = make([]particle.Field, 0, max(len(s), min(len(s)*left, len(d.data))))
	}
	start := len(d.fields)
	for _, sf := range s {
		d.fields = append(d.fields, particle.Field{Key: sf.key, Value: d.value(sf.kind)})
	}
	p.Fields = d.fields[start:len(d.fields):len(d.fields)]
}

func (d *decoder) value(k particle.ValueKind) particle.Value {
	switch k {
	case particle.KindFloat:
		switch decimals := d.byte(); {
		case decimals == rawFloat:
			return particle.Float(math.Float64frombits(d.fixed64()))
		case decimals <= maxDecimals:
			return particle.Float(float64(d.varint()) / pow10[decimals])
		default:
			d.fail("float with %d decimals", decimals)
			return particle.Value{}
		}
	case particle.KindInt:
		return particle.Int(d.varint())
	case particle.KindUint:
		return particle.Uint(d.uvarint())
	case particle.KindString:
		return particle.String(d.string())
	default:
		return particle.Bool(d.byte() != 0)
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
