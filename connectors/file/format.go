package file

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Names of the presets that Preset knows.
const (
	// PresetLineProtocol is line protocol with nanosecond timestamps.
	PresetLineProtocol = "lp"
	// PresetCSV is comma-separated text with a header; the first column
	// is the time (LayoutAuto) and the others are fields (ValueAuto).
	PresetCSV = "csv"
	// PresetSemicolon is PresetCSV separated by semicolons.
	PresetSemicolon = "semicolon"
	// PresetTSV is PresetCSV separated by tabs.
	PresetTSV = "tsv"
	// PresetWhitespace is PresetCSV separated by runs of blanks.
	PresetWhitespace = "whitespace"
	// PresetUCIAirQuality reads AirQualityUCI.csv of the UCI "Air Quality"
	// dataset: semicolons, decimal commas, "DD/MM/YYYY;HH.MM.SS" local
	// time without a zone (UTC unless TimeConfig.Zone says otherwise), and
	// -200 for a missing value. Particles are "airquality" with one field
	// per value column: co_gt, pt08_s1_co, nmhc_gt, c6h6_gt, pt08_s2_nmhc,
	// nox_gt, pt08_s3_nox, no2_gt, pt08_s4_no2, pt08_s5_o3, t, rh, ah. A
	// missing value leaves its field out; the 31 records whose values are
	// all missing carry nothing and are skipped and counted (see
	// Reader.Skipped), not malformed. The trailing rows of semicolons are
	// blank lines, not records.
	PresetUCIAirQuality = "uci-airquality"
	// PresetUCIOccupancy reads the files of the UCI "Occupancy Detection"
	// dataset: a header naming 7 columns over records of 8 (a quoted row
	// id comes first and is dropped), timestamps quoted or not, local time
	// without a zone. Particles are "occupancy" with the float fields
	// temperature, humidity, light, co2, humidity_ratio and the int field
	// occupancy.
	PresetUCIOccupancy = "uci-occupancy"
	// PresetULBWSN reads the sensor files (R*.txt) of the ULB wireless
	// sensor network datasets: space-separated, no header, epoch
	// milliseconds, decimal commas, and a no-break space (Latin-1 0xA0)
	// grouping the thousands of the sequence number. Particles are "wsn"
	// with the tag node, the int field seq and the float fields int_temp,
	// int_voltage, humidity, temperature, par and tsr.
	PresetULBWSN = "ulb-wsn"
)

// Presets returns the names Preset knows, sorted.
func Presets() []string {
	names := []string{PresetLineProtocol, PresetCSV, PresetSemicolon, PresetTSV, PresetWhitespace,
		PresetUCIAirQuality, PresetUCIOccupancy, PresetULBWSN}
	slices.Sort(names)
	return names
}

// Preset returns the Format of a preset name (see the Preset* constants).
// The caller may adjust it, for example its time zone or measurement.
func Preset(name string) (Format, error) {
	switch name {
	case PresetLineProtocol:
		return Format{}, nil
	case PresetCSV:
		return headed(","), nil
	case PresetSemicolon:
		return headed(";"), nil
	case PresetTSV:
		return headed("\t"), nil
	case PresetWhitespace:
		return headed(SeparatorWhitespace), nil
	case PresetUCIAirQuality:
		return uciAirQuality(), nil
	case PresetUCIOccupancy:
		return uciOccupancy(), nil
	case PresetULBWSN:
		return ulbWSN(), nil
	}
	return Format{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownFormat, name, strings.Join(Presets(), ", "))
}

// Detect returns the Format that a file's name suggests, ignoring a ".gz"
// suffix: ".csv" is PresetCSV, ".tsv" is PresetTSV, and anything else line
// protocol.
func Detect(path string) Format {
	ext := filepath.Ext(strings.TrimSuffix(strings.ToLower(path), ".gz"))
	var f Format
	switch ext {
	case ".csv":
		f, _ = Preset(PresetCSV)
	case ".tsv":
		f, _ = Preset(PresetTSV)
	}
	return f
}

func headed(sep string) Format {
	return Format{Syntax: Delimited, Delimited: DelimitedConfig{Separator: sep, Header: true}}
}

func floats(index int, keys ...string) []Column {
	cols := make([]Column, len(keys))
	for i, k := range keys {
		cols[i] = Column{Index: index + i, Key: k, Type: ValueFloat}
	}
	return cols
}

func uciAirQuality() Format {
	return Format{Syntax: Delimited, Delimited: DelimitedConfig{
		Separator:   ";",
		Header:      true,
		Measurement: "airquality",
		Time:        TimeConfig{Columns: []Column{{Index: 0}, {Index: 1}}, Layout: "02/01/2006 15.04.05"},
		Fields: floats(2, "co_gt", "pt08_s1_co", "nmhc_gt", "c6h6_gt", "pt08_s2_nmhc", "nox_gt",
			"pt08_s3_nox", "no2_gt", "pt08_s4_no2", "pt08_s5_o3", "t", "rh", "ah"),
		DecimalComma: true,
		Missing:      []string{"-200"},
	}}
}

func uciOccupancy() Format {
	fields := append(floats(2, "temperature", "humidity", "light", "co2", "humidity_ratio"),
		Column{Index: 7, Key: "occupancy", Type: ValueInt})
	return Format{Syntax: Delimited, Delimited: DelimitedConfig{
		Separator:   ",",
		Header:      true,
		Measurement: "occupancy",
		Time:        TimeConfig{Columns: []Column{{Index: 1}}, Layout: "2006-01-02 15:04:05"},
		Fields:      fields,
	}}
}

func ulbWSN() Format {
	fields := append([]Column{{Index: 2, Key: "seq", Type: ValueInt}},
		floats(3, "int_temp", "int_voltage", "humidity", "temperature", "par", "tsr")...)
	return Format{Syntax: Delimited, Delimited: DelimitedConfig{
		Separator:    SeparatorWhitespace,
		Measurement:  "wsn",
		Time:         TimeConfig{Columns: []Column{{Index: 0}}, Layout: "ms"},
		Tags:         []Column{{Index: 1, Key: "node"}},
		Fields:       fields,
		DecimalComma: true,
		Thousands:    "\xa0",
	}}
}
