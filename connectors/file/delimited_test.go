package file_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
)

// readAll reads every record of input as line protocol lines (without the
// newline) or error texts.
func readAll(t testing.TB, input string, f file.Format) (lines []string, errs []error, skipped int) {
	t.Helper()
	r, err := file.NewReader(strings.NewReader(input), "in.csv", f)
	require.NoError(t, err)
	var p particle.Particle
	for {
		err := r.Read(&p)
		if err == io.EOF {
			return lines, errs, r.Skipped()
		}
		var de *particle.DecodeError
		if errors.As(err, &de) {
			errs = append(errs, err)
			continue
		}
		require.NoError(t, err)
		b, err := particle.AppendLineProtocol(nil, &p, particle.Second)
		require.NoError(t, err)
		lines = append(lines, strings.TrimSuffix(string(b), "\n"))
	}
}

func delimited(c file.DelimitedConfig) file.Format {
	return file.Format{Syntax: file.Delimited, Delimited: c}
}

func TestDelimited(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     file.DelimitedConfig
		input   string
		want    []string
		errs    []string
		skipped int
	}{
		{
			name:  "csv with header, auto types",
			cfg:   file.DelimitedConfig{Header: true, Measurement: "m"},
			input: "time,temp,ok,name\n2024-01-02T03:04:05Z,21.5,true,north\n1704164646,22,false,\"so,uth\"\n",
			want: []string{
				`m temp=21.5,ok=true,name="north" 1704164645`,
				`m temp=22,ok=false,name="so,uth" 1704164646`,
			},
		},
		{
			name: "semicolons, decimal comma, missing sentinel, date and time columns, CRLF",
			cfg: file.DelimitedConfig{
				Separator: ";", Header: true, Measurement: "aq", DecimalComma: true, Missing: []string{"-200"},
				Time:   file.TimeConfig{Columns: []file.Column{{Index: 0}, {Index: 1}}, Layout: "02/01/2006 15.04.05", Zone: "+01:00"},
				Fields: []file.Column{{Index: 2, Key: "co", Type: file.ValueFloat}, {Index: 3, Key: "no2", Type: file.ValueFloat}},
			},
			input:   "Date;Time;CO;NO2;;\r\n10/03/2004;18.00.00;2,6;-200,0;;\r\n10/03/2004;19.00.00;-200;-200;;\r\n;;;;;\r\n;;;;;\r\n",
			want:    []string{`aq co=2.6 1078938000`},
			skipped: 1,
		},
		{
			name: "whitespace, no header, epoch ms, tags, thousands separator",
			cfg: file.DelimitedConfig{
				Separator: file.SeparatorWhitespace, Measurement: "wsn", Thousands: "\xa0", DecimalComma: true,
				Time:      file.TimeConfig{Layout: "ms"},
				Tags:      []file.Column{{Index: 1, Key: "node"}},
				Fields:    []file.Column{{Index: 2, Key: "seq", Type: file.ValueInt}, {Index: 3, Key: "v", Type: file.ValueFloat}},
				ConstTags: map[string]string{"site": "lib"},
			},
			input: "1163438041250  20 1\xa0000 21,21\n\n1163438042000\t3 7 2\n",
			want: []string{
				`wsn,node=20,site=lib seq=1000i,v=21.21 1163438041`,
				`wsn,node=3,site=lib seq=7i,v=2 1163438042`,
			},
		},
		{
			name:  "header with one name fewer: row names first",
			cfg:   file.DelimitedConfig{Header: true, Measurement: "o", Time: file.TimeConfig{Columns: []file.Column{{Name: "date"}}}},
			input: "\"date\",\"T\"\n\"1\",\"2015-02-04 17:51:00\",23.18\n\"2\",2015-02-04 17:52:00,23.15\n",
			want:  []string{`o T=23.18 1423072260`, `o T=23.15 1423072320`},
		},
		{
			name:  "quotes inside quotes",
			cfg:   file.DelimitedConfig{Measurement: "q", Fields: []file.Column{{Index: 1, Key: "s", Type: file.ValueString}}},
			input: `5,"say ""hi"", then go"` + "\n",
			want:  []string{`q s="say \"hi\", then go" 5`},
		},
		{
			name: "malformed records are reported with line and column and skipped",
			cfg: file.DelimitedConfig{Measurement: "m", Fields: []file.Column{
				{Index: 1, Key: "a", Type: file.ValueFloat}, {Index: 2, Key: "b", Type: file.ValueInt}}},
			input: "1,2,3\nx,2,3\n4,2\n5,2.5,3.5\n6,\"2,3\n7,\"2\"x,3\n8,1,1\n",
			want:  []string{`m a=2,b=3i 1`, `m a=1,b=1i 8`},
			errs: []string{
				`particle: decode in.csv:2:1: file: bad timestamp "x": not an epoch number nor RFC 3339 nor 2006-01-02 15:04:05`,
				`particle: decode in.csv:3: file: too few fields: 2, the mapping needs 3`,
				`particle: decode in.csv:4:7: file: bad value: b "3.5": strconv.ParseInt: parsing "3.5": invalid syntax`,
				`particle: decode in.csv:5:3: file: misplaced quote`,
				`particle: decode in.csv:6:6: file: misplaced quote: text after the closing quote`,
			},
		},
		{
			name:  "a record with more columns than the header is malformed",
			cfg:   file.DelimitedConfig{Header: true, Measurement: "m"},
			input: "time,a,b\n1,2,3\n2,4,5,6\n3,7,8,\n4,9,10\n",
			want:  []string{`m a=2,b=3 1`, `m a=9,b=10 4`},
			errs: []string{
				`particle: decode in.csv:3:7: file: too many fields: 4, the header has 3`,
				`particle: decode in.csv:4:7: file: too many fields: 4, the header has 3`,
			},
		},
		{
			name: "what line protocol cannot hold is malformed where it is read: NaN, infinities, a tag ending in a backslash",
			cfg: file.DelimitedConfig{Header: true, Measurement: "m", Missing: []string{"nan"},
				Tags: []file.Column{{Name: "room"}}},
			input: "time,room,v\n1,a,NaN\n2,a,-Inf\n3,a\\,4\n4,a,nan\n5,a,5\n",
			want:  []string{`m,room=a v=5 5`},
			errs: []string{
				`particle: decode in.csv:2:5: file: bad value: v "NaN": not a finite number`,
				`particle: decode in.csv:3:5: file: bad value: v "-Inf": not a finite number`,
				`particle: decode in.csv:4: particle: encode: invalid tag value room="a\\"`,
			},
			skipped: 1,
		},
		{
			name:  "without a header, the first record sets the width",
			cfg:   file.DelimitedConfig{Measurement: "m"},
			input: "1,2\n2,3,4\n3,5\n",
			want:  []string{`m c1=2 1`, `m c1=5 3`},
			errs:  []string{`particle: decode in.csv:2:5: file: too many fields: 3, the first record has 2`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, errs, skipped := readAll(t, tc.input, delimited(tc.cfg))
			assert.Equal(t, tc.want, lines)
			var texts []string
			for _, e := range errs {
				texts = append(texts, e.Error())
			}
			assert.Equal(t, tc.errs, texts)
			assert.Equal(t, tc.skipped, skipped)
		})
	}
}

func TestEpochUnits(t *testing.T) {
	want := time.Date(2024, 1, 2, 3, 4, 5, 250_000_000, time.UTC).UnixNano()
	for _, in := range []string{"1704164645.25", "1704164645250", "1704164645250000", "1704164645250000000", "2024-01-02T03:04:05.25Z", "2024-01-02 03:04:05.25"} {
		lines, errs, _ := readAll(t, in+",1\n", delimited(file.DelimitedConfig{Measurement: "m"}))
		require.Empty(t, errs, in)
		require.Len(t, lines, 1, in)
		r, err := file.NewReader(strings.NewReader(in+",1\n"), "x", delimited(file.DelimitedConfig{Measurement: "m"}))
		require.NoError(t, err)
		var p particle.Particle
		require.NoError(t, r.Read(&p))
		assert.Equal(t, want, p.Time, in)
	}
}

func TestInvalidFormats(t *testing.T) {
	for name, c := range map[string]file.DelimitedConfig{
		"decimal comma with comma separator": {DecimalComma: true},
		"two-byte separator":                 {Separator: ";;"},
		"name without header":                {Tags: []file.Column{{Name: "x"}}},
		"bad zone":                           {Time: file.TimeConfig{Zone: "Mars/Olympus"}},
		"digit as thousands separator":       {Thousands: "1"},
	} {
		_, err := file.NewReader(strings.NewReader(""), "x", delimited(c))
		assert.ErrorIs(t, err, file.ErrInvalidFormat, name)
	}
	_, err := file.Preset("parquet")
	assert.ErrorIs(t, err, file.ErrUnknownFormat)
}

func TestUnknownColumnName(t *testing.T) {
	r, err := file.NewReader(strings.NewReader("a,b\n1,2\n"), "x", delimited(file.DelimitedConfig{
		Header: true, Time: file.TimeConfig{Columns: []file.Column{{Name: "time"}}}}))
	require.NoError(t, err)
	var p particle.Particle
	assert.ErrorIs(t, r.Read(&p), file.ErrUnknownColumn)
}

func TestDetect(t *testing.T) {
	csv, _ := file.Preset(file.PresetCSV)
	tsv, _ := file.Preset(file.PresetTSV)
	assert.Equal(t, csv, file.Detect("a/b.CSV.gz"))
	assert.Equal(t, tsv, file.Detect("b.tsv"))
	assert.Equal(t, file.Format{}, file.Detect("b.lp.gz"))
}

// TestDelimitedRoundTrip writes random readings as CSV and checks that
// they read back unchanged.
func TestDelimitedRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type row struct {
			ts   int64
			node string
			v    float64
		}
		rows := rapid.SliceOf(rapid.Custom(func(t *rapid.T) row {
			return row{
				ts:   rapid.Int64Range(0, 4e18).Draw(t, "ts"),
				node: rapid.StringMatching(`[a-z ,"]{1,6}`).Draw(t, "node"),
				v:    rapid.Float64Range(-1e6, 1e6).Draw(t, "v"),
			}
		})).Draw(t, "rows")
		var b strings.Builder
		b.WriteString("time,node,v\n")
		for _, r := range rows {
			b.WriteString(time.Unix(0, r.ts).UTC().Format(time.RFC3339Nano))
			b.WriteString(`,"` + strings.ReplaceAll(r.node, `"`, `""`) + `",`)
			b.WriteString(particle.Float(r.v).String() + "\n")
		}
		rd, err := file.NewReader(strings.NewReader(b.String()), "x", delimited(file.DelimitedConfig{
			Header: true, Measurement: "m", Tags: []file.Column{{Name: "node"}}, Fields: []file.Column{{Name: "v", Type: file.ValueFloat}}}))
		require.NoError(t, err)
		for i, want := range rows {
			var p particle.Particle
			require.NoError(t, rd.Read(&p), "row %d", i)
			require.Equal(t, want.ts, p.Time)
			node, _ := p.Tag("node")
			require.Equal(t, want.node, node)
			v, _ := p.Field("v")
			require.Equal(t, particle.Float(want.v), v)
		}
		var p particle.Particle
		require.Equal(t, io.EOF, rd.Read(&p))
	})
}

func FuzzDelimited(f *testing.F) {
	f.Add("time,a,b\n1,2,3\n\"2\",\"x\"\"y\",4\n")
	f.Add("10/03/2004;18.00.00;2,6;-200;;\r\n;;;\r\n")
	f.Add("1163438041250 20 1\xa0000 21,21 2,81\n")
	f.Fuzz(func(t *testing.T, in string) {
		for _, preset := range []string{file.PresetCSV, file.PresetUCIAirQuality, file.PresetULBWSN, file.PresetUCIOccupancy} {
			fm, err := file.Preset(preset)
			require.NoError(t, err)
			r, err := file.NewReader(strings.NewReader(in), "fuzz", fm)
			require.NoError(t, err)
			var p particle.Particle
			for range len(in) + 2 {
				err := r.Read(&p)
				if err == io.EOF {
					break
				}
				var de *particle.DecodeError
				if errors.As(err, &de) {
					require.Positive(t, de.Line)
					continue
				}
				if errors.Is(err, file.ErrUnknownColumn) {
					break
				}
				require.NoError(t, err)
				require.NotEmpty(t, p.Fields)
			}
		}
	})
}
