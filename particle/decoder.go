package particle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// Defaults of DecoderConfig.
const (
	DefaultPrecision = Nanosecond
	DefaultStartLine = 1
	// DefaultMaxLineLength is the default DecoderConfig.MaxLineLength.
	DefaultMaxLineLength = 4 << 20
	// MaxMaxLineLength is the largest DecoderConfig.MaxLineLength.
	MaxMaxLineLength = 1 << 30
)

// DecoderConfig configures a Decoder. The zero value decodes nanosecond
// timestamps, numbers lines from 1 and rejects lines without a timestamp.
type DecoderConfig struct {
	// Precision is the unit of the timestamps in the input. Defaults to
	// Nanosecond.
	Precision Precision `yaml:"precision"`
	// DefaultTime, if not nil, gives the time in nanoseconds since the
	// Unix epoch of a line without a timestamp; it is called once per such
	// line. If nil, such a line is a *DecodeError wrapping ErrNoTime.
	// Defaults to nil.
	DefaultTime func() int64 `yaml:"-"`
	// Origin is stamped on every decoded particle. Defaults to 0.
	Origin uint32 `yaml:"-"`
	// StartLine is the number of the input's first line, so that inputs
	// decoded one after another (MQTT payloads) can report positions in
	// the whole stream. Defaults to 1.
	StartLine int `yaml:"-"`
	// MaxLineLength is the most bytes a line may have, not counting its
	// line feed. A longer line is one malformed line, a *DecodeError
	// wrapping ErrLineTooLong; an input read from an io.Reader goes
	// through LimitLines, so that decoding it holds about this many bytes
	// at most, however long its lines. Defaults to DefaultMaxLineLength.
	MaxLineLength int `yaml:"max_line_length"`
}

func (c *DecoderConfig) setDefaults() {
	if c.StartLine == 0 {
		c.StartLine = DefaultStartLine
	}
	if c.MaxLineLength == 0 {
		c.MaxLineLength = DefaultMaxLineLength
	}
}

// Validate reports an unknown precision, a negative start line or a
// maximum line length outside [0, MaxMaxLineLength].
func (c *DecoderConfig) Validate() error {
	if c.MaxLineLength < 0 || c.MaxLineLength > MaxMaxLineLength {
		return fmt.Errorf("particle: decoder config: max line length %d, want 1 to %d", c.MaxLineLength, MaxMaxLineLength)
	}
	if !c.Precision.valid() {
		return fmt.Errorf("particle: decoder config: %w %d", ErrUnknownPrecision, c.Precision)
	}
	if c.StartLine < 0 {
		return fmt.Errorf("particle: decoder config: negative start line %d", c.StartLine)
	}
	return nil
}

// Memory layout of decoded particles. Each particle's tags, fields and
// string field values are carved out of chunks shared with its neighbours,
// which is what keeps decoding near one allocation per hundred lines. The
// sizes bound what one retained particle keeps alive (about 40 KiB).
const (
	tagSlabLen     = 256      // tags per slab
	fieldSlabLen   = 256      // fields per slab
	minRoom        = 16       // free slots a slab needs for a line; a longer line costs an allocation
	maxPositional  = 64       // key positions remembered per line
	arenaLen       = 16 << 10 // bytes per string arena chunk
	maxArenaString = 1 << 10  // longer strings get their own allocation
	internLimit    = 4096     // distinct strings a decoder interns
	maxInternLen   = 256      // longer strings are not interned
	recentBits     = 6        // log2 of the entries of the cache in front of the intern table
	maxTagSets     = 4096     // tag sets remembered for sharing
	readSize       = 32 << 10 // bytes read from an io.Reader at once
	maxPiece       = 256      // see feeder
	maxEmptyReads  = 100      // reads returning nothing before io.ErrNoProgress
	maxRaw         = 64 << 10 // bytes of a line Raw returns at most
)

// Decoder reads particles from InfluxDB line protocol, one line at a time.
//
// Decoded particles are independent values: they do not refer to the input
// nor to the decoder's buffers, and they stay valid and unchanged for as
// long as they are referenced, however many lines are decoded afterwards.
// Their strings and slices share backing arrays with other particles
// decoded by the same Decoder, so they must be treated as read-only (as
// every emitted particle must; appending to Tags or Fields is safe, it
// copies). Repeated strings (measurements, keys, tag values) are interned,
// and a particle whose tags equal those of one decoded shortly before
// shares that particle's Tags.
//
// Tags are sorted by key; fields keep their order in the line. A key given
// twice, among the tags or among the fields, makes the line malformed.
// Blank lines and comment lines are skipped.
//
// A line is an entry: a malformed line is one error and decoding goes on
// with the next line. A raw newline ends the line, also inside a string
// field value, so that a string without its closing quote takes only its
// own line with it, not the lines after it (the line is a *DecodeError
// wrapping ErrUnterminatedString).
//
// Lines are read as InfluxDB reads them where line protocol's own
// decoder differs: in a string field value only \\ and \" are escapes
// (\n is a backslash and an n), and a tag value may hold control
// characters other than NUL, newline and carriage return.
//
// A Decoder is not safe for concurrent use.
type Decoder struct {
	cfg    DecoderConfig
	source string
	feed   feeder
	limit  lineLimiter // under feed, for an input read from an io.Reader
	lp     lineprotocol.Decoder
	seq    uint64
	line   int
	err    error
	// lpLines is the number of input lines that lp did not read before
	// the line it reads: lp is replaced after a string ran into the end
	// of its line, and lines decoded by decodeSimple bypass it.
	lpLines int
	// lpClean says that lp has read nothing beyond the last entry it
	// decoded, so that the next line may bypass it (see decodeSimple).
	lpClean bool
	// lpStale says that lp must be replaced before it reads: it is
	// replaced only when a line needs it, so that an input of plain lines
	// does not pay for it.
	lpStale bool
	// scratch holds the line reparse substitutes.
	scratch []byte
	// noSimple makes every line go through lp, for tests that compare
	// decodeSimple with it.
	noSimple bool

	tagSlab     []Tag   // free part of the current slab
	fieldSlab   []Field // free part of the current slab
	arena       []byte  // free part of the current chunk
	interned    map[string]string
	recent      [1 << recentBits]string // interned strings by recentIndex, to skip the map
	tagSets     map[uint64][]Tag        // tag sets handed out, by tagSetHash, to share
	measurement string                  // last measurement
	tagKeys     []string                // last key at each tag position
	fieldKeys   []string                // last key at each field position
}

// NewDecoder returns a decoder that reads line protocol from r. The source
// names r in errors.
func NewDecoder(r io.Reader, source string, cfg DecoderConfig) (*Decoder, error) {
	d, err := newDecoder(cfg)
	if err != nil {
		return nil, err
	}
	d.Reset(r, source)
	return d, nil
}

// NewDecoderBytes returns a decoder that reads line protocol from b, such
// as an MQTT payload. Decoded particles do not refer to b, but b must not
// be modified until Decode has returned io.EOF.
func NewDecoderBytes(b []byte, source string, cfg DecoderConfig) (*Decoder, error) {
	d, err := newDecoder(cfg)
	if err != nil {
		return nil, err
	}
	d.ResetBytes(b, source)
	return d, nil
}

func newDecoder(cfg DecoderConfig) (*Decoder, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Decoder{cfg: cfg, interned: make(map[string]string), tagSets: make(map[uint64][]Tag)}, nil
}

// Reset makes d decode a new input, r named source, with lines numbered
// from the configured StartLine. Sequence numbers continue where they
// were, so that particles of one origin stay distinct, and the intern
// table and slabs are reused; particles decoded before are unaffected.
// A source of many small inputs, such as MQTT payloads, should keep one
// Decoder and reset it for each. A reset allocates nothing itself, but an
// input with a line outside the plain form that most lines have (see
// decodeSimple) then costs two allocations (about 9 KiB): line
// protocol's own decoder cannot be reset.
func (d *Decoder) Reset(r io.Reader, source string) {
	d.reset(source)
	d.limit = lineLimiter{r: r, max: d.cfg.MaxLineLength}
	d.feed.reset(&d.limit, d.feed.buf[:0])
}

// ResetBytes is like Reset for an input held in b.
func (d *Decoder) ResetBytes(b []byte, source string) {
	d.reset(source)
	d.feed.reset(nil, b)
}

func (d *Decoder) reset(source string) {
	if d.feed.r == nil {
		// The buffer was the previous input's, not ours to reuse.
		d.feed.buf = nil
	}
	d.source = source
	d.line = 0
	d.err = nil
	d.lpLines = 0
	d.lpStale = true
	d.lpClean = true
}

// SetStartLine sets the number of the current input's first line, and of
// the inputs after it, as DecoderConfig.StartLine does: for an input that
// continues another, such as a block of a file decoded apart from the
// lines before it. Call it before the input's first Decode; n below 1
// counts as 1.
func (d *Decoder) SetStartLine(n int) { d.cfg.StartLine = max(n, 1) }

// Line returns the number of the line on which the entry last decoded (a
// particle or a *DecodeError) starts, or 0 before the first. After a read
// error, it is the line where the input broke off.
func (d *Decoder) Line() int { return d.line }

// Decode decodes the next line into *p.
//
// It returns io.EOF at the end of the input; a *DecodeError for a
// malformed line, after which Decode may be called again and resumes at
// the next line; any other error is a read error and final. *p is only
// written when the error is nil. Particles get the configured Origin and
// sequence numbers 1, 2, 3, ... in decoding order.
func (d *Decoder) Decode(p *Particle) error {
	if d.err != nil {
		return d.err
	}
	if d.line == 0 && d.cfg.StartLine == 1 {
		d.feed.skipBOM()
	}
	d.feed.keep = d.feed.pieceLineStart
	d.feed.inEntry = false
	if d.lpClean && !d.noSimple && d.decodeSimple(p) {
		return nil
	}
	d.lpClean = false
	if d.lpStale {
		// The line-protocol decoder cannot be reset, only replaced.
		d.lp = *lineprotocol.NewDecoder(&d.feed)
		d.lpStale = false
	}
	if !d.lp.Next() {
		if d.feed.err != nil {
			return d.readFailed()
		}
		return io.EOF
	}
	d.feed.startEntry()
	d.line = d.feed.entryLine + d.cfg.StartLine - 1
	err := d.decodeEntry(p)
	if d.feed.err != nil {
		// The entry was cut short by the read error, not malformed.
		return d.readFailed()
	}
	if d.feed.stopped {
		err = d.restartAfterLineEnd(err)
	} else {
		// An entry that decoded has been read to the end of its line.
		d.lpClean = err == nil
	}
	if err != nil && d.tooLong() {
		// Whatever went wrong, it went wrong in a line cut short.
		return d.tooLongError()
	}
	return err
}

// tooLong reports whether the current entry's line is longer than the
// configured maximum.
func (d *Decoder) tooLong() bool { return d.feed.entryLonger(d.cfg.MaxLineLength) }

func (d *Decoder) tooLongError() error {
	return &DecodeError{Source: d.source, Line: d.line, Column: d.cfg.MaxLineLength + 1, Err: ErrLineTooLong}
}

// readFailed makes the feeder's read error final.
func (d *Decoder) readFailed() error {
	d.err = d.feed.err
	d.line = d.feed.line + d.cfg.StartLine - 1
	return d.err
}

// restartAfterLineEnd handles a string field value that ran into the end
// of its line: the feeder refused lp the next line, and lp, which takes
// that for the end of the input, reported err, a missing closing quote. A
// new lp goes on with the next line.
func (d *Decoder) restartAfterLineEnd(err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		de.Err = ErrUnterminatedString
	} else {
		de = &DecodeError{Source: d.source, Line: d.line, Err: ErrUnterminatedString}
	}
	d.feed.stopped = false
	d.lpLines = d.feed.line - 1
	d.lpStale = true
	d.lpClean = true
	return de
}

// Raw returns the bytes of the line on which the entry last decoded
// starts, without its line ending and cut at 64 KiB: the input of a
// malformed line, for a dead letter. It is valid until the next Decode.
// It may read ahead in the input, which does not change what Decode
// returns.
func (d *Decoder) Raw() []byte {
	if d.line == 0 {
		return nil
	}
	return d.feed.entryRaw()
}

// parsed is a line parsed by line protocol's decoder, its tags and
// fields not yet claimed.
type parsed struct {
	measurement string
	tags        []Tag
	fields      []Field
	ns          int64
}

func (d *Decoder) decodeEntry(p *Particle) error {
	e, err := d.parseEntry(&d.lp, false)
	if (err != nil || e.mayDifferFromInfluxDB()) && d.feed.err == nil && !d.feed.stopped && !d.tooLong() {
		if alt, ok := d.reparse(); ok {
			e, err = alt, nil
		}
	}
	if err != nil {
		return err
	}
	if d.tooLong() {
		// A prefix of a line can decode.
		return d.tooLongError()
	}
	setHash, shared := d.tagSet(e.tags)
	d.finish(p, e.ns, e.measurement, e.tags, e.fields, setHash, shared)
	return nil
}

// parseEntry parses the entry lp is at. With restore, the line was
// substituted (see reparse): the placeholders in what lp returns are
// turned back into the bytes they stand for, and its tags and fields get
// arrays of their own, so that the slabs' free parts, where the entry
// parsed first may be, stay as they are.
func (d *Decoder) parseEntry(lp *lineprotocol.Decoder, restore bool) (parsed, error) {
	m, err := lp.Measurement()
	if err != nil {
		return parsed{}, d.lineProtocolError(err)
	}
	if m, err = restored(m, restore, false); err != nil {
		return parsed{}, err
	}
	e := parsed{measurement: d.key(&d.measurement, m)}

	// Tags and fields are appended in place to the free part of their
	// slabs and claimed only if the line decodes; otherwise the next line
	// overwrites them, which is safe as no particle refers to them.
	e.tags, e.fields = room(&d.tagSlab, tagSlabLen), room(&d.fieldSlab, fieldSlabLen)
	if restore {
		e.tags, e.fields = nil, nil
	}
	for {
		k, v, err := lp.NextTag()
		if err != nil {
			return parsed{}, d.lineProtocolError(err)
		}
		if k == nil {
			break
		}
		if k, err = restored(k, restore, false); err != nil {
			return parsed{}, err
		}
		if v, err = restored(v, restore, true); err != nil {
			return parsed{}, err
		}
		e.tags = append(e.tags, Tag{Key: d.positional(&d.tagKeys, len(e.tags), k), Value: d.intern(v)})
	}
	for {
		k, v, err := lp.NextField()
		if err != nil {
			return parsed{}, d.lineProtocolError(err)
		}
		if k == nil {
			break
		}
		if k, err = restored(k, restore, false); err != nil {
			return parsed{}, err
		}
		var val Value
		if restore && v.Kind() == lineprotocol.String {
			b, _ := restored(v.BytesV(), true, true)
			val = String(d.copyString(b))
		} else {
			val = d.value(v)
		}
		e.fields = append(e.fields, Field{Key: d.positional(&d.fieldKeys, len(e.fields), k), Value: val})
	}

	// Keys are checked once lp has read past the fields: lp would skip
	// them at the next line, and skipping a string field must not read
	// the following lines (see feeder.inEntry).
	if err := checkKeys(e.tags, e.fields); err != nil {
		return parsed{}, d.lineError(err)
	}

	// The zero time.Time stands for "no timestamp": no int64 of
	// nanoseconds reaches year 1.
	t, err := lp.Time(lineprotocol.Precision(d.cfg.Precision), time.Time{})
	if err != nil {
		return parsed{}, d.lineProtocolError(err)
	}
	switch {
	case !t.IsZero():
		e.ns = t.UnixNano()
	case d.cfg.DefaultTime != nil:
		e.ns = d.cfg.DefaultTime()
	default:
		return parsed{}, d.lineError(ErrNoTime)
	}
	return e, nil
}

// checkKeys sorts tags by key and reports a key given twice among the
// tags or among the fields.
func checkKeys(tags []Tag, fields []Field) error {
	if !slices.IsSortedFunc(tags, compareTags) {
		slices.SortFunc(tags, compareTags)
	}
	for i := 1; i < len(tags); i++ {
		if tags[i].Key == tags[i-1].Key {
			return fmt.Errorf("%w %q", ErrDuplicateTag, tags[i].Key)
		}
	}
	if k, ok := duplicateField(fields); ok {
		return fmt.Errorf("%w %q", ErrDuplicateField, k)
	}
	return nil
}

// finish writes the decoded line to *p, claiming tags (unless a shared
// set replaces them) and fields from their slabs.
func (d *Decoder) finish(p *Particle, ns int64, measurement string, tags []Tag, fields []Field, setHash uint64, shared []Tag) {
	if shared == nil {
		shared = claim(&d.tagSlab, tags)
		d.rememberTagSet(setHash, shared)
	}
	d.seq++
	*p = Particle{
		Time:        ns,
		Origin:      d.cfg.Origin,
		Seq:         d.seq,
		Measurement: measurement,
		Tags:        shared,
		Fields:      claim(&d.fieldSlab, fields),
	}
}

func compareTags(a, b Tag) int { return strings.Compare(a.Key, b.Key) }

// duplicateField returns a key that fields has twice. Lines have few
// fields, and comparing every pair costs less than sorting a copy.
func duplicateField(fields []Field) (string, bool) {
	for i := 1; i < len(fields); i++ {
		for j := range i {
			if fields[i].Key == fields[j].Key {
				return fields[i].Key, true
			}
		}
	}
	return "", false
}

// lineProtocolError converts an error of lineprotocol.Decoder. Its
// *DecodeError counts lines from the start of the current input and
// columns from the measurement, not from the start of the line. Its other
// errors, from Time, have no position: they concern the timestamp, the
// last word of the entry.
func (d *Decoder) lineProtocolError(err error) error {
	lpErr, ok := err.(*lineprotocol.DecodeError)
	if !ok {
		line, col := d.feed.lastWord()
		return &DecodeError{Source: d.source, Line: line + d.cfg.StartLine - 1, Column: col, Err: err}
	}
	line := int(lpErr.Line) + d.lpLines
	col := lpErr.Column
	if line == d.feed.entryLine {
		col += d.feed.entryIndent()
	}
	return &DecodeError{Source: d.source, Line: line + d.cfg.StartLine - 1, Column: col, Err: lpErr.Err}
}

func (d *Decoder) lineError(err error) error {
	return &DecodeError{Source: d.source, Line: d.line, Err: err}
}

// room returns an empty slice over the free part of *slab, first giving
// *slab a new array of size elements if fewer than minRoom are free.
func room[T any](slab *[]T, size int) []T {
	if len(*slab) < minRoom {
		*slab = make([]T, size)
	}
	return (*slab)[:0]
}

// claim returns s, built by appending to room(slab), with its capacity
// clipped so that appending to it cannot overwrite a neighbour, and
// removes it from the free part of *slab, unless append had to move it
// elsewhere.
func claim[T any](slab *[]T, s []T) []T {
	if len(s) == 0 {
		return nil
	}
	if unsafe.SliceData(s) == unsafe.SliceData(*slab) {
		*slab = (*slab)[len(s):]
	}
	return s[:len(s):len(s)]
}

// key returns b as a string, reusing *last if equal: measurements repeat
// from line to line, and a comparison is cheaper than a map lookup.
func (d *Decoder) key(last *string, b []byte) string {
	if *last != string(b) {
		*last = d.intern(b)
	}
	return *last
}

// positional is like key for the i-th tag or field key of a line: lines of
// one source tend to have the same keys in the same order.
func (d *Decoder) positional(last *[]string, i int, b []byte) string {
	if i < len(*last) {
		return d.key(&(*last)[i], b)
	}
	s := d.intern(b)
	if i == len(*last) && i < maxPositional {
		*last = append(*last, s)
	}
	return s
}

// intern returns b as a string, the same string for the same bytes as long
// as the intern table has room. The strings met lately are looked up in a
// small cache first, which costs less than the table.
func (d *Decoder) intern(b []byte) string {
	i := recentIndex(b)
	if s := d.recent[i]; s == string(b) {
		return s
	}
	if s, ok := d.interned[string(b)]; ok {
		d.recent[i] = s
		return s
	}
	if len(d.interned) >= internLimit || len(b) > maxInternLen {
		return d.copyString(b)
	}
	// Interned strings get their own allocation so that the table, which
	// lives as long as the decoder, does not pin arena chunks.
	s := string(b)
	d.interned[s] = s
	d.recent[i] = s
	return s
}

// recentIndex returns the slot of b in Decoder.recent: a hash of its
// length and of its first, middle and last bytes, where short names and
// tag values, such as sensor ids, differ.
func recentIndex(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	h := uint32(len(b))*131 + uint32(b[0])*31 + uint32(b[len(b)/2])*7 + uint32(b[len(b)-1])
	return int((h * 0x9e3779b1) >> (32 - recentBits))
}

// tagSet returns the hash of tags and, if a set with that hash was
// handed out and equals tags, that set, to be shared instead of claiming
// tags: readings of one series repeat its tags line after line. The hash
// is of the strings' addresses, the same for equal strings once they are
// interned. Sets are neither shared nor remembered once the intern table
// is full: equal strings are then no longer the same, and a source with
// that many distinct strings would mostly miss.
func (d *Decoder) tagSet(tags []Tag) (uint64, []Tag) {
	if !d.sharesTags(tags) {
		return 0, nil
	}
	h := uint64(len(tags))
	for _, t := range tags {
		h = (h ^ uint64(uintptr(unsafe.Pointer(unsafe.StringData(t.Key))))) * 0x9e3779b97f4a7c15
		h = (h ^ uint64(uintptr(unsafe.Pointer(unsafe.StringData(t.Value))))) * 0x9e3779b97f4a7c15
	}
	if set, ok := d.tagSets[h]; ok && slices.Equal(set, tags) {
		return h, set
	}
	return h, nil
}

func (d *Decoder) sharesTags(tags []Tag) bool {
	return len(tags) > 0 && len(d.interned) < internLimit
}

// rememberTagSet remembers set, just claimed, under its hash h from
// tagSet. The table starts afresh when full, so that it follows the
// series of the moment; as every set it holds was claimed in turn, the
// slab memory it keeps alive is about that of its sets.
func (d *Decoder) rememberTagSet(h uint64, set []Tag) {
	if !d.sharesTags(set) {
		return
	}
	if len(d.tagSets) >= maxTagSets {
		clear(d.tagSets)
	}
	d.tagSets[h] = set
}

// copyString copies b into the arena and returns it as a string. The arena
// only moves forward: bytes handed out are never written again.
func (d *Decoder) copyString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxArenaString {
		return string(b)
	}
	if len(d.arena) < len(b) {
		d.arena = make([]byte, arenaLen)
	}
	n := copy(d.arena, b)
	s := unsafe.String(&d.arena[0], n)
	d.arena = d.arena[n:]
	return s
}

func (d *Decoder) value(v lineprotocol.Value) Value {
	switch v.Kind() {
	case lineprotocol.Float:
		return Float(v.FloatV())
	case lineprotocol.Int:
		return Int(v.IntV())
	case lineprotocol.Uint:
		return Uint(v.UintV())
	case lineprotocol.Bool:
		return Bool(v.BoolV())
	}
	// The bytes of a string value belong to the line-protocol decoder.
	return String(d.copyString(v.BytesV()))
}

// feeder is the io.Reader under lineprotocol.Decoder. It hands out the
// input in pieces that never cross the end of a line, and remembers where
// each piece's line starts, because lineprotocol.Decoder does not tell its
// position. When lineprotocol.Decoder starts an entry, the entry is on the
// line of the last piece served: it reads only when out of data, entries
// start after a newline, and it never reads past a newline before an
// entry's first byte (it may read ahead within the line, as when it checks
// a comment and then backs up to report it). That gives the entry's line,
// and the line's bytes, kept in buf until the next entry, place the errors
// lineprotocol.Decoder leaves unplaced or misplaces. Pieces are at most
// maxPiece bytes so that lineprotocol.Decoder, which moves up to that many
// unread bytes to the front of its buffer at each entry, keeps using one
// small buffer.
type feeder struct {
	r   io.Reader // nil when the input is all in buf
	buf []byte
	err error // first read error other than io.EOF, once buf is served
	// pending is a read error that came with data: it becomes err when
	// that data is served, so that the lines before it decode.
	pending error
	eof     bool

	pos       int // next byte to serve
	line, col int // position of buf[pos]: one-based line, zero-based column
	keep      int // buf[keep:] must survive refills; keep <= pos-col

	pieceLine, pieceLineStart int // line of the last piece served, and its start in buf
	entryLine, entryStart     int // line of the current entry, and its start in buf

	// inEntry is set while lp decodes an entry, lineEnd when the last
	// piece served ended a line. lp asks for more in an entry after its
	// line's end only to go on with a string field value: line protocol
	// allows raw newlines in strings, which would let one missing quote
	// take the lines after it. The feeder refuses instead, as if the
	// input ended there, and sets stopped.
	inEntry, lineEnd, stopped bool
}

func (f *feeder) reset(r io.Reader, buf []byte) {
	*f = feeder{r: r, buf: buf, line: 1, pieceLine: 1, entryLine: 1}
}

// Read implements io.Reader for lineprotocol.Decoder.
func (f *feeder) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if f.inEntry && f.lineEnd {
		f.stopped = true
		return 0, errLineEnd
	}
	if f.pos == len(f.buf) && !f.fill() {
		if f.err != nil {
			return 0, f.err
		}
		return 0, io.EOF
	}
	piece := f.buf[f.pos:min(len(f.buf), f.pos+maxPiece, f.pos+len(p))]
	if i := bytes.IndexByte(piece, '\n'); i >= 0 {
		piece = piece[:i+1]
	}
	n := copy(p, piece)
	f.pieceLine, f.pieceLineStart = f.line, f.pos-f.col
	f.pos += n
	f.lineEnd = piece[n-1] == '\n'
	if f.lineEnd {
		f.line++
		f.col = 0
	} else {
		f.col += n
	}
	return n, nil
}

// errLineEnd is what the feeder tells lp when it refuses to go on past the
// end of an entry's line. lp does not report it.
var errLineEnd = errors.New("particle: end of line in an entry")

// fill reads more input into buf, keeping buf[keep:], and reports whether
// there is data to serve.
func (f *feeder) fill() bool {
	if f.pending != nil {
		f.err, f.pending = f.pending, nil
	}
	if f.r == nil || f.eof || f.err != nil {
		return false
	}
	if f.keep > 0 {
		n := copy(f.buf, f.buf[f.keep:])
		f.buf = f.buf[:n]
		f.pos -= f.keep
		f.pieceLineStart -= f.keep
		f.entryStart -= f.keep
		f.keep = 0
	}
	if cap(f.buf)-len(f.buf) < readSize/2 {
		b := make([]byte, len(f.buf), max(readSize, 2*cap(f.buf)))
		copy(b, f.buf)
		f.buf = b
	}
	for range maxEmptyReads {
		n, err := f.r.Read(f.buf[len(f.buf):cap(f.buf)])
		f.buf = f.buf[:len(f.buf)+n]
		switch {
		case err == io.EOF:
			f.eof = true
		case err != nil && n > 0:
			f.pending = err
		case err != nil:
			f.err = err
		}
		if n > 0 || err != nil {
			return n > 0
		}
	}
	f.err = io.ErrNoProgress
	return false
}

// fillAhead is fill for a read ahead of lineprotocol.Decoder: a read
// error, which comes after the data still to serve, is kept pending, to
// reach lineprotocol.Decoder only where it reads past that data.
func (f *feeder) fillAhead() bool {
	more := f.fill()
	if f.err != nil {
		f.pending, f.err = f.err, nil
	}
	return more
}

// startEntry records that lineprotocol.Decoder has started an entry.
func (f *feeder) startEntry() {
	f.entryLine, f.entryStart = f.pieceLine, f.pieceLineStart
	f.keep = f.entryStart
	f.inEntry = true
}

// entryRaw returns the current entry's line without its line ending, cut
// at maxRaw bytes, reading more of the input if needed; buf keeps it, as
// keep is entryStart until the next entry.
func (f *feeder) entryRaw() []byte {
	for {
		line := f.buf[f.entryStart:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		} else if len(line) < maxRaw && f.pending == nil {
			if f.fillAhead() {
				continue
			}
			// fill may have moved the line to the front of buf even
			// though no more input came.
			line = f.buf[f.entryStart:]
		}
		return bytes.TrimRight(line[:min(len(line), maxRaw)], "\r")
	}
}

// entryLonger reports whether the current entry's line, without its line
// feed, is longer than limit bytes, reading more of the input if needed,
// as entryRaw does.
func (f *feeder) entryLonger(limit int) bool {
	for {
		line := f.buf[f.entryStart:]
		if i := bytes.IndexByte(line[:min(len(line), limit+1)], '\n'); i >= 0 {
			return false
		}
		if len(line) > limit || f.pending != nil || f.err != nil || !f.fillAhead() {
			return len(line) > limit
		}
	}
}

// bom is the UTF-8 byte order mark.
var bom = []byte{0xef, 0xbb, 0xbf}

// skipBOM skips a byte order mark at the next byte to serve, which an
// editor may have put at the start of a file: it is no part of the first
// line, not even of its columns.
func (f *feeder) skipBOM() {
	for len(f.buf)-f.pos < len(bom) && f.pending == nil && f.err == nil && f.fillAhead() {
	}
	if bytes.HasPrefix(f.buf[f.pos:], bom) {
		f.pos += len(bom)
		f.pieceLineStart = f.pos
		f.entryStart = f.pos
	}
}

// entryIndent returns the number of spaces before the current entry on its
// line, which line protocol's columns leave out.
func (f *feeder) entryIndent() int {
	raw := f.buf[f.entryStart:f.pos]
	return len(raw) - len(bytes.TrimLeft(raw, " "))
}

// lastWord returns the line and one-based column of the last word served
// in the current entry.
func (f *feeder) lastWord() (line, col int) {
	raw := f.buf[f.entryStart:f.pos]
	raw = bytes.TrimRight(raw, " \r\n")
	start := bytes.LastIndexByte(raw, ' ') + 1
	nl := bytes.LastIndexByte(raw[:start], '\n')
	return f.entryLine + bytes.Count(raw[:start], []byte{'\n'}), start - nl
}
