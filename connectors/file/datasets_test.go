package file_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
)

// datasets is where the recordings of ../shared/datasets are kept,
// unchanged, for the tests.
var datasets = filepath.Join("..", "..", "testdata", "datasets")

// tally is what reading a recording yields.
type tally struct {
	records, invalid, skipped int
	first, last               int64
	present                   map[string]int // particles carrying each field
	tags                      map[string]int // distinct values of each tag
	backwards                 int            // records older than the one before
}

func read(t *testing.T, path string, f file.Format) tally {
	t.Helper()
	r, err := file.OpenReader(path, f)
	require.NoError(t, err)
	defer r.Close()
	tl := tally{present: map[string]int{}, tags: map[string]int{}}
	values := map[string]map[string]bool{}
	var p particle.Particle
	for {
		err := r.Read(&p)
		if err == io.EOF {
			break
		}
		var de *particle.DecodeError
		if errors.As(err, &de) {
			tl.invalid++
			continue
		}
		require.NoError(t, err)
		if tl.records == 0 {
			tl.first = p.Time
		} else if p.Time < tl.last {
			tl.backwards++
		}
		tl.records++
		tl.last = p.Time
		for _, f := range p.Fields {
			tl.present[f.Key]++
		}
		for _, tg := range p.Tags {
			if values[tg.Key] == nil {
				values[tg.Key] = map[string]bool{}
			}
			values[tg.Key][tg.Value] = true
		}
	}
	tl.skipped = r.Skipped()
	assert.Equal(t, r.Size(), r.Offset(), "the whole file was read")
	for k, v := range values {
		tl.tags[k] = len(v)
	}
	return tl
}

// assertClean checks that a recording yielded rows records, none invalid,
// skipped or out of order, from first to last.
func assertClean(t *testing.T, tl tally, rows int, first, last string) {
	t.Helper()
	assert.Equal(t, rows, tl.records)
	assert.Zero(t, tl.invalid)
	assert.Zero(t, tl.skipped)
	assert.Zero(t, tl.backwards)
	assert.Equal(t, utc(first), tl.first)
	assert.Equal(t, utc(last), tl.last)
}

func utc(s string) int64 {
	t, err := time.Parse(time.DateTime+".000", s)
	if err != nil {
		panic(err)
	}
	return t.UnixNano()
}

// TestAirQuality checks the counts that SOURCE.md gives: 9357 records, of
// which 31 have every value missing (-200, also written -200,0) and are
// skipped; the 114 trailing rows of semicolons are blank, not records.
func TestAirQuality(t *testing.T) {
	f, err := file.Preset(file.PresetUCIAirQuality)
	require.NoError(t, err)
	tl := read(t, filepath.Join(datasets, "uci-airquality", "AirQualityUCI.csv"), f)
	assert.Equal(t, 9357-31, tl.records)
	assert.Equal(t, 31, tl.skipped)
	assert.Zero(t, tl.invalid)
	assert.Zero(t, tl.backwards)
	assert.Equal(t, utc("2004-03-10 18:00:00.000"), tl.first)
	assert.Equal(t, utc("2005-04-04 14:00:00.000"), tl.last)
	assert.Equal(t, 9357-1683, tl.present["co_gt"])
	assert.Equal(t, 9357-8443, tl.present["nmhc_gt"])
	assert.Equal(t, 9357-1639, tl.present["nox_gt"])
	assert.Equal(t, 9357-1642, tl.present["no2_gt"])
	for _, k := range []string{"c6h6_gt", "pt08_s1_co", "pt08_s5_o3", "t", "rh", "ah"} {
		assert.Equal(t, 9357-366, tl.present[k], k)
	}
}

// TestOccupancy checks each file's rows, the quoted and unquoted
// timestamps, and the 8-field rows under a 7-name header.
func TestOccupancy(t *testing.T) {
	f, err := file.Preset(file.PresetUCIOccupancy)
	require.NoError(t, err)
	for _, tc := range []struct {
		name        string
		rows        int
		first, last string
	}{
		{"datatest.txt", 2665, "2015-02-02 14:19:00.000", "2015-02-04 10:43:00.000"},
		{"datatraining.txt", 8143, "2015-02-04 17:51:00.000", "2015-02-10 09:33:00.000"},
		{"datatest2.txt", 9752, "2015-02-11 14:48:00.000", "2015-02-18 09:19:00.000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := read(t, filepath.Join(datasets, "uci-occupancy", tc.name), f)
			assertClean(t, tl, tc.rows, tc.first, tc.last)
			for _, k := range []string{"temperature", "humidity", "light", "co2", "humidity_ratio", "occupancy"} {
				assert.Equal(t, tc.rows, tl.present[k], k)
			}
		})
	}
}

// TestULBWSN checks each file's rows and nodes, R2's trailing blank line
// and R3's Latin-1 no-break space in the sequence numbers.
func TestULBWSN(t *testing.T) {
	f, err := file.Preset(file.PresetULBWSN)
	require.NoError(t, err)
	for _, tc := range []struct {
		name        string
		rows        int
		first, last string
	}{
		{"R1.txt", 7563, "2006-11-13 17:14:01.250", "2006-11-13 23:59:08.593"},
		{"R2.txt", 11110, "2006-11-14 00:00:03.453", "2006-11-14 09:52:07.750"},
		{"R3.txt", 11029, "2006-11-14 09:53:05.546", "2006-11-14 19:48:22.640"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := read(t, filepath.Join(datasets, "ulb-library1-wsn", tc.name), f)
			assertClean(t, tl, tc.rows, tc.first, tc.last)
			assert.Equal(t, tc.rows, tl.present["seq"])
			assert.LessOrEqual(t, tl.tags["node"], 19)
		})
	}
}

// TestULBR3SequenceNumbers checks that 1<0xA0>000 reads as 1000.
func TestULBR3SequenceNumbers(t *testing.T) {
	f, err := file.Preset(file.PresetULBWSN)
	require.NoError(t, err)
	r, err := file.OpenReader(filepath.Join(datasets, "ulb-library1-wsn", "R3.txt"), f)
	require.NoError(t, err)
	defer r.Close()
	var p particle.Particle
	require.NoError(t, r.Read(&p))
	seq, ok := p.Field("seq")
	require.True(t, ok)
	assert.Equal(t, particle.Int(1000), seq)
}

// TestULBR1MatchesTestdata checks that R1.txt read with the ulb-wsn preset
// (and the deployment tag) is, line for line, the line-protocol recording
// in testdata that was converted from it.
func TestULBR1MatchesTestdata(t *testing.T) {
	f, err := file.Preset(file.PresetULBWSN)
	require.NoError(t, err)
	f.Delimited.ConstTags = map[string]string{"deployment": "library1"}
	r, err := file.OpenReader(filepath.Join(datasets, "ulb-library1-wsn", "R1.txt"), f)
	require.NoError(t, err)
	defer r.Close()
	lp, err := os.Open(filepath.Join("..", "..", "testdata", "library1-r1.lp"))
	require.NoError(t, err)
	defer lp.Close()
	want := bufio.NewScanner(lp)
	var p particle.Particle
	n := 0
	for {
		err := r.Read(&p)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		line, err := particle.AppendLineProtocol(nil, &p, particle.Nanosecond)
		require.NoError(t, err)
		require.True(t, want.Scan())
		require.Equal(t, want.Text()+"\n", string(line), "record %d", n+1)
		n++
	}
	assert.False(t, want.Scan())
	assert.Equal(t, 7563, n)
}
