package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	replaysrc "github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/particle"
)

// formatFlags are the flags that say how replay reads its files: a preset
// or syntax, adjusted by column mappings.
type formatFlags struct {
	preset       string
	precision    particle.Precision
	maxLine      int
	zone         string
	measurement  string
	constTags    tagFlag
	timeCols     string
	timeFormat   string
	tags         string
	fields       string
	header       bool
	separator    string
	decimalComma bool
	thousands    string
	missing      string

	set map[string]bool // the flags given on the command line
}

func (f *formatFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.preset, "format", "", "input format: "+strings.Join(file.Presets(), ", ")+
		"\n(default: by extension, .csv is csv, .tsv is tsv, anything else lp)")
	fs.TextVar(&f.precision, "precision", particle.Nanosecond, "timestamp precision of line-protocol input and of the output: ns, us, ms or s")
	fs.IntVar(&f.maxLine, "max-line-length", particle.DefaultMaxLineLength, "most `BYTES` an input line may have: a longer line is one bad record, read past without being held")
	fs.StringVar(&f.zone, "tz", file.DefaultZone, "time zone of delimited timestamps without one: UTC, Local, an IANA name or an offset such as +01:00\n"+
		"(AirQualityUCI.csv is local Italian time without DST jumps: use +01:00, not Europe/Rome)")
	fs.StringVar(&f.measurement, "measurement", "", "measurement of delimited records (default: the preset's, or the file name)")
	fs.Var(&f.constTags, "tag", "`KEY=VALUE` tag added to every delimited record; repeatable")
	fs.StringVar(&f.timeCols, "time", "", "delimited time `COLUMNS`, names or zero-based indexes joined by commas (default 0)")
	fs.StringVar(&f.timeFormat, "time-format", "", "delimited time `LAYOUT`: a Go layout, auto, or s, ms, us, ns for epoch numbers (default auto)")
	fs.StringVar(&f.tags, "tags", "", "delimited tag `COLUMNS`")
	fs.StringVar(&f.fields, "fields", "", "delimited field `COLUMNS`, each NAME or NAME:TYPE (float, int, uint, string, bool, auto);\n"+
		"default: every other named column, typed auto")
	fs.BoolVar(&f.header, "header", true, "delimited files start with a header line")
	fs.StringVar(&f.separator, "separator", "", "delimited field separator: one character, tab or whitespace")
	fs.BoolVar(&f.decimalComma, "decimal-comma", false, "delimited numbers use a decimal comma")
	fs.StringVar(&f.thousands, "thousands", "", "characters grouping digits in delimited numbers, removed before parsing")
	fs.StringVar(&f.missing, "missing", "", "delimited `VALUES` that stand for a missing value, joined by commas (such as -200)")
}

// recordSet notes which flags were given, so that only those override a
// preset.
func (f *formatFlags) recordSet(fs *flag.FlagSet) {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
}

// delimitedFlags are the flags that describe delimited text.
var delimitedFlags = []string{"measurement", "tag", "time", "time-format", "tags", "fields", "separator", "decimal-comma", "thousands", "missing"}

// formatFor returns the format of the file at path.
func (f *formatFlags) formatFor(path string) (file.Format, error) {
	var fm file.Format
	if f.preset != "" {
		var err error
		if fm, err = file.Preset(f.preset); err != nil {
			return fm, err
		}
	} else {
		fm = file.Detect(path)
		if fm.Syntax == file.LineProtocol && (f.set["separator"] || f.set["fields"] || f.set["time"]) {
			// Column flags on a file without a known extension mean CSV.
			fm, _ = file.Preset(file.PresetCSV)
		}
	}
	fm.Precision = f.precision
	fm.MaxLineLength = f.maxLine
	if fm.Syntax != file.Delimited {
		for _, name := range delimitedFlags {
			if f.set[name] {
				return fm, fmt.Errorf("-%s applies to delimited formats, not to line protocol (%s)", name, path)
			}
		}
		return fm, nil
	}
	d := &fm.Delimited
	d.Time.Zone = f.zone
	if f.set["measurement"] {
		d.Measurement = f.measurement
	}
	if len(f.constTags) > 0 {
		d.ConstTags = map[string]string{}
		for _, kv := range f.constTags {
			d.ConstTags[kv[0]] = kv[1]
		}
	}
	if f.set["header"] {
		d.Header = f.header
	}
	if f.set["separator"] {
		switch f.separator {
		case "tab", `\t`:
			d.Separator = "\t"
		default:
			d.Separator = f.separator
		}
	}
	if f.set["decimal-comma"] {
		d.DecimalComma = f.decimalComma
	}
	if f.set["thousands"] {
		d.Thousands = f.thousands
	}
	if f.set["missing"] {
		d.Missing = strings.Split(f.missing, ",")
	}
	if f.set["time"] {
		d.Time.Columns = columns(f.timeCols)
	}
	if f.set["time-format"] {
		d.Time.Layout = f.timeFormat
	}
	if f.set["tags"] {
		d.Tags = columns(f.tags)
	}
	if f.set["fields"] {
		cols := columns(f.fields)
		for i := range cols {
			name, typ, ok := strings.Cut(cols[i].Name, ":")
			if !ok {
				continue
			}
			if err := cols[i].Type.UnmarshalText([]byte(typ)); err != nil {
				return fm, err
			}
			cols[i].Name = name
			if n, err := strconv.Atoi(name); err == nil {
				cols[i] = file.Column{Index: n, Type: cols[i].Type}
			}
		}
		d.Fields = cols
	}
	return fm, fm.Validate()
}

// columns parses a comma-separated list of column names and indexes.
func columns(s string) []file.Column {
	var cols []file.Column
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if n, err := strconv.Atoi(item); err == nil {
			cols = append(cols, file.Column{Index: n})
			continue
		}
		cols = append(cols, file.Column{Name: item})
	}
	return cols
}

// tagFlag collects KEY=VALUE pairs.
type tagFlag [][2]string

func (t *tagFlag) String() string {
	parts := make([]string, len(*t))
	for i, kv := range *t {
		parts[i] = kv[0] + "=" + kv[1]
	}
	return strings.Join(parts, ",")
}

func (t *tagFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	*t = append(*t, [2]string{k, v})
	return nil
}

// instantFlag is a --from or --to.
type instantFlag struct{ t time.Time }

func (f *instantFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f *instantFlag) Set(s string) error {
	t, err := replaysrc.ParseInstant(s)
	if err != nil {
		return err
	}
	f.t = t
	return nil
}
