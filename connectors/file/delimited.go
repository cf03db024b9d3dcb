package file

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sensorstorm/sensorstorm/particle"
)

const (
	// maxInterned bounds the tag values a delimitedDecoder interns.
	maxInterned = 4096
	// maxRaw bounds the prefix of a line too long that raw returns.
	maxRaw = 64 << 10
)

// bom is the UTF-8 byte order mark, which an editor may put at the start
// of a file: it is no part of the first line.
var bom = []byte{0xef, 0xbb, 0xbf}

// errNoValues marks a record all of whose field values are missing.
var errNoValues = errors.New("file: record without values")

// errNotFinite is the cause of an ErrBadValue for NaN or an infinity.
var errNotFinite = errors.New("not a finite number")

// boundColumn is a Column resolved to its index and key.
type boundColumn struct {
	index int
	key   string
	typ   ValueType
}

// delimitedDecoder reads particles from delimited text.
type delimitedDecoder struct {
	cfg    DelimitedConfig
	source string
	br     *bufio.Reader
	max    int // bytes a line may have
	ws     bool
	sep    byte
	layout timeLayout
	loc    *time.Location

	textMissing []string
	numMissing  []float64

	lineNo  int
	long    []byte   // a line longer than br's buffer
	lineBuf []byte   // the current line, for raw
	fields  [][]byte // the current line's fields
	cols    []int    // one-based column where each field starts
	unq     []byte   // unquoted fields with "" inside
	num     []byte   // scratch for numbers
	tbuf    []byte   // scratch for joined time columns

	header      []string
	sawHeader   bool
	resolved    bool
	need        int // fields a record must have
	width       int // fields a record may have: the header's, or the first record's
	timeCols    []int
	tags        []boundColumn
	values      []boundColumn
	constTags   []particle.Tag
	measurement string
	interned    map[string]string

	seq     uint64
	skipped int
}

func newDelimitedDecoder(r io.Reader, source string, cfg DelimitedConfig, maxLine int) (*delimitedDecoder, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	layout, _ := parseLayout(cfg.Time.Layout)
	loc, _ := parseZone(cfg.Time.Zone)
	d := &delimitedDecoder{
		cfg:      cfg,
		source:   source,
		br:       bufio.NewReaderSize(particle.LimitLines(r, maxLine), 64<<10),
		max:      maxLine,
		ws:       cfg.Separator == SeparatorWhitespace,
		layout:   layout,
		loc:      loc,
		interned: make(map[string]string),
	}
	if !d.ws {
		d.sep = cfg.Separator[0]
	}
	for _, m := range cfg.Missing {
		d.textMissing = append(d.textMissing, m)
		if f, err := strconv.ParseFloat(m, 64); err == nil {
			d.numMissing = append(d.numMissing, f)
		}
	}
	d.measurement = cfg.Measurement
	if d.measurement == "" {
		d.measurement = baseName(source)
	}
	for k, v := range cfg.ConstTags {
		d.constTags = append(d.constTags, particle.Tag{Key: k, Value: v})
	}
	return d, nil
}

// baseName is the file name of path without its extensions.
func baseName(path string) string {
	name := filepath.Base(path)
	if i := strings.IndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	if name == "" || name == "." || name == string(filepath.Separator) {
		return "reading"
	}
	return name
}

func (d *delimitedDecoder) line() int   { return d.lineNo }
func (d *delimitedDecoder) raw() []byte { return d.lineBuf }
func (d *delimitedDecoder) skips() int  { return d.skipped }
func (d *delimitedDecoder) errAt(col int, err error) error {
	return &particle.DecodeError{Source: d.source, Line: d.lineNo, Column: col, Err: err}
}

// readLine returns the next line without its line ending. The slice is
// valid until the next call.
func (d *delimitedDecoder) readLine() ([]byte, error) {
	line, err := d.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		d.long = append(d.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = d.br.ReadSlice('\n')
			d.long = append(d.long, line...)
		}
		line = d.long
	}
	if err == io.EOF && len(line) > 0 {
		err = nil // the last line has no line ending
	}
	if err != nil {
		return nil, err
	}
	d.lineNo++
	if d.lineNo == 1 {
		line = bytes.TrimPrefix(line, bom)
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	return bytes.TrimSuffix(line, []byte{'\r'}), nil
}

// decode reads the next record into *p.
func (d *delimitedDecoder) decode(p *particle.Particle) error {
	for {
		line, err := d.readLine()
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return readError(d.source, d.lineNo+1, err)
		}
		d.lineBuf = line
		if len(line) > d.max {
			d.lineBuf = line[:min(len(line), maxRaw)]
			return d.errAt(d.max+1, particle.ErrLineTooLong)
		}
		if err := d.split(line); err != nil {
			return err
		}
		if d.blank() {
			continue
		}
		if d.cfg.Header && !d.sawHeader {
			d.sawHeader = true
			d.header = make([]string, len(d.fields))
			for i, f := range d.fields {
				d.header[i] = string(f)
			}
			continue
		}
		if !d.resolved {
			if err := d.resolve(len(d.fields)); err != nil {
				return err
			}
		}
		switch err := d.record(p); {
		case errors.Is(err, errNoValues):
			d.skipped++
		case err != nil:
			return err
		default:
			return nil
		}
	}
}

// split cuts line into d.fields, removing quotes and surrounding blanks.
func (d *delimitedDecoder) split(line []byte) error {
	d.fields, d.cols = d.fields[:0], d.cols[:0]
	// Unquoting never makes a field longer, so unq never moves and the
	// fields sliced from it stay valid.
	if cap(d.unq) < len(line) {
		d.unq = make([]byte, 0, len(line))
	}
	d.unq = d.unq[:0]
	i := 0
	for {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if d.ws && i == len(line) {
			return nil
		}
		start := i
		var field []byte
		if i < len(line) && line[i] == '"' {
			var err error
			field, i, err = d.quoted(line, i)
			if err != nil {
				return err
			}
			for i < len(line) && isBlank(line[i]) {
				i++
			}
			if i < len(line) && !d.isSep(line[i]) {
				return d.errAt(i+1, fmt.Errorf("%w: text after the closing quote", ErrQuote))
			}
		} else {
			for i < len(line) && !d.isSep(line[i]) {
				i++
			}
			field = bytes.TrimRight(line[start:i], " \t")
		}
		d.fields = append(d.fields, field)
		d.cols = append(d.cols, start+1)
		if i >= len(line) {
			return nil
		}
		if !d.ws {
			i++ // the separator
		}
	}
}

// quoted returns the quoted field starting at line[i] and the index after
// its closing quote.
func (d *delimitedDecoder) quoted(line []byte, i int) ([]byte, int, error) {
	start := i + 1
	for j := start; j < len(line); j++ {
		if line[j] != '"' {
			continue
		}
		if j+1 < len(line) && line[j+1] == '"' {
			return d.unescape(line, start)
		}
		return line[start:j], j + 1, nil
	}
	return nil, 0, d.errAt(i+1, ErrQuote)
}

// unescape copies the quoted field from line[start:] into d.unq, turning
// "" into ".
func (d *delimitedDecoder) unescape(line []byte, start int) ([]byte, int, error) {
	from := len(d.unq)
	for j := start; j < len(line); j++ {
		if line[j] != '"' {
			d.unq = append(d.unq, line[j])
			continue
		}
		if j+1 < len(line) && line[j+1] == '"' {
			d.unq = append(d.unq, '"')
			j++
			continue
		}
		return d.unq[from:], j + 1, nil
	}
	return nil, 0, d.errAt(start, ErrQuote)
}

func (d *delimitedDecoder) isSep(c byte) bool {
	if d.ws {
		return isBlank(c)
	}
	return c == d.sep
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// blank reports whether every field of the line is empty.
func (d *delimitedDecoder) blank() bool {
	for _, f := range d.fields {
		if len(f) > 0 {
			return false
		}
	}
	return true
}

// resolve binds the configured columns to indexes, given the number of
// fields of the first record.
func (d *delimitedDecoder) resolve(n int) error {
	d.resolved = true
	names := d.header
	offset := 0
	if names != nil && len(names) == n-1 {
		offset = 1 // R's row names: the header leaves the first column out
	}
	d.width = n
	if names != nil {
		d.width = len(names) + offset
	}
	bind := func(c Column) (boundColumn, error) {
		idx := c.Index
		if c.Name != "" {
			i := slices.Index(names, c.Name)
			if i < 0 {
				return boundColumn{}, fmt.Errorf("%w %q in %s", ErrUnknownColumn, c.Name, d.source)
			}
			idx = i + offset
		}
		var key string
		switch {
		case c.Key != "":
			key = c.Key
		case c.Name != "":
			key = c.Name
		case idx-offset >= 0 && idx-offset < len(names) && names[idx-offset] != "":
			key = names[idx-offset]
		default:
			key = "c" + strconv.Itoa(idx)
		}
		d.need = max(d.need, idx+1)
		return boundColumn{index: idx, key: key, typ: c.Type}, nil
	}
	used := make(map[int]bool)
	for _, c := range d.cfg.Time.Columns {
		b, err := bind(c)
		if err != nil {
			return err
		}
		d.timeCols = append(d.timeCols, b.index)
		used[b.index] = true
	}
	keys := make(map[string]bool)
	for _, t := range d.constTags {
		keys[t.Key] = true
	}
	for _, c := range d.cfg.Tags {
		b, err := bind(c)
		if err != nil {
			return err
		}
		if keys[b.key] {
			return fmt.Errorf("%w: tag key %q given twice", ErrInvalidFormat, b.key)
		}
		keys[b.key] = true
		d.tags = append(d.tags, b)
		used[b.index] = true
	}
	cols := d.cfg.Fields
	if len(cols) == 0 {
		for i := range n {
			named := names == nil || (i-offset >= 0 && i-offset < len(names) && names[i-offset] != "")
			if !used[i] && named {
				cols = append(cols, Column{Index: i})
			}
		}
	}
	for _, c := range cols {
		b, err := bind(c)
		if err != nil {
			return err
		}
		d.values = append(d.values, b)
	}
	return nil
}

// widthFrom names what set the record width.
func (d *delimitedDecoder) widthFrom() string {
	if d.header != nil {
		return "header"
	}
	return "first record"
}

// record turns the fields of the current line into *p.
func (d *delimitedDecoder) record(p *particle.Particle) error {
	if len(d.fields) < d.need {
		return d.errAt(0, fmt.Errorf("%w: %d, the mapping needs %d", ErrTooFewFields, len(d.fields), d.need))
	}
	if len(d.fields) > d.width {
		return d.errAt(d.cols[d.width], fmt.Errorf("%w: %d, the %s has %d", ErrTooManyFields, len(d.fields), d.widthFrom(), d.width))
	}
	t, err := d.time()
	if err != nil {
		return err
	}
	var fields []particle.Field
	for _, c := range d.values {
		v, ok, err := d.value(c)
		if err != nil {
			return err
		}
		if ok {
			if fields == nil {
				fields = make([]particle.Field, 0, len(d.values))
			}
			fields = append(fields, particle.Field{Key: c.key, Value: v})
		}
	}
	if len(fields) == 0 {
		return errNoValues
	}
	var tags []particle.Tag
	if n := len(d.tags) + len(d.constTags); n > 0 {
		tags = make([]particle.Tag, 0, n)
		tags = append(tags, d.constTags...)
		for _, c := range d.tags {
			f := d.fields[c.index]
			if len(f) == 0 || d.missingText(f) {
				continue
			}
			if !utf8.Valid(f) {
				return d.errAt(d.cols[c.index], fmt.Errorf("%w: tag %s is not UTF-8", ErrBadValue, c.key))
			}
			tags = append(tags, particle.Tag{Key: c.key, Value: d.intern(f)})
		}
		slices.SortFunc(tags, func(a, b particle.Tag) int { return strings.Compare(a.Key, b.Key) })
	}
	d.seq++
	*p = particle.Particle{Time: t, Seq: d.seq, Measurement: d.measurement, Tags: tags, Fields: fields}
	return nil
}

func (d *delimitedDecoder) time() (int64, error) {
	text := d.fields[d.timeCols[0]]
	if len(d.timeCols) > 1 {
		d.tbuf = d.tbuf[:0]
		for i, c := range d.timeCols {
			if i > 0 {
				d.tbuf = append(d.tbuf, ' ')
			}
			d.tbuf = append(d.tbuf, d.fields[c]...)
		}
		text = d.tbuf
	}
	col := d.cols[d.timeCols[0]]
	if len(bytes.TrimSpace(text)) == 0 {
		return 0, d.errAt(col, fmt.Errorf("%w: empty", ErrBadTime))
	}
	t, err := d.layout.parse(text, d.loc)
	if err != nil {
		return 0, d.errAt(col, fmt.Errorf("%w %q: %v", ErrBadTime, text, err))
	}
	return t, nil
}

// value parses the field of column c; ok is false for a missing value.
func (d *delimitedDecoder) value(c boundColumn) (v particle.Value, ok bool, err error) {
	f := d.fields[c.index]
	if len(f) == 0 || d.missingText(f) {
		return particle.Value{}, false, nil
	}
	bad := func(cause error) error {
		return d.errAt(d.cols[c.index], fmt.Errorf("%w: %s %q: %v", ErrBadValue, c.key, f, cause))
	}
	switch c.typ {
	case ValueFloat, ValueAuto:
		x, err := strconv.ParseFloat(string(d.number(f)), 64)
		switch {
		case err == nil && d.missingNumber(x):
			return particle.Value{}, false, nil
		case err == nil && (math.IsNaN(x) || math.IsInf(x, 0)):
			// Line protocol has no NaN or infinity; list the text in
			// DelimitedConfig.Missing to read it as a missing value.
			return particle.Value{}, false, bad(errNotFinite)
		case err == nil:
			return particle.Float(x), true, nil
		case c.typ == ValueFloat:
			return particle.Value{}, false, bad(err)
		}
		if b, err := strconv.ParseBool(string(f)); err == nil && len(f) > 1 {
			return particle.Bool(b), true, nil
		}
		if !utf8.Valid(f) {
			return particle.Value{}, false, bad(errors.New("not UTF-8"))
		}
		return particle.String(string(f)), true, nil
	case ValueInt:
		x, err := strconv.ParseInt(string(d.number(f)), 10, 64)
		if err != nil {
			return particle.Value{}, false, bad(err)
		}
		if d.missingNumber(float64(x)) {
			return particle.Value{}, false, nil
		}
		return particle.Int(x), true, nil
	case ValueUint:
		x, err := strconv.ParseUint(string(d.number(f)), 10, 64)
		if err != nil {
			return particle.Value{}, false, bad(err)
		}
		if d.missingNumber(float64(x)) {
			return particle.Value{}, false, nil
		}
		return particle.Uint(x), true, nil
	case ValueBool:
		b, err := strconv.ParseBool(string(f))
		if err != nil {
			return particle.Value{}, false, bad(err)
		}
		return particle.Bool(b), true, nil
	}
	if !utf8.Valid(f) {
		return particle.Value{}, false, bad(errors.New("not UTF-8"))
	}
	return particle.String(string(f)), true, nil
}

// number returns f without thousands separators and with a decimal comma
// made a point. The result is valid until the next call.
func (d *delimitedDecoder) number(f []byte) []byte {
	if d.cfg.Thousands == "" && !d.cfg.DecimalComma {
		return f
	}
	d.num = d.num[:0]
	for _, c := range f {
		switch {
		case strings.IndexByte(d.cfg.Thousands, c) >= 0:
		case c == ',' && d.cfg.DecimalComma:
			d.num = append(d.num, '.')
		default:
			d.num = append(d.num, c)
		}
	}
	return d.num
}

func (d *delimitedDecoder) missingText(f []byte) bool {
	for _, m := range d.textMissing {
		if string(f) == m {
			return true
		}
	}
	return false
}

func (d *delimitedDecoder) missingNumber(x float64) bool {
	return slices.Contains(d.numMissing, x)
}

func (d *delimitedDecoder) intern(b []byte) string {
	if s, ok := d.interned[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.interned) < maxInterned {
		d.interned[s] = s
	}
	return s
}
