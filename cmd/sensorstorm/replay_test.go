package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	replaysrc "github.com/sensorstorm/sensorstorm/connectors/replay"
)

// datasetsDir is where the recordings of ../shared/datasets are kept,
// unchanged, for the tests.
var datasetsDir = filepath.Join("..", "..", "testdata", "datasets")

// runReplay runs the replay command and returns its exit code, stdout and
// stderr.
func runReplay(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	defer goleak.VerifyNone(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"replay"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// lastLine returns the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestReplayDatasets replays every recording of shared/datasets with its
// preset and checks the counts that its SOURCE.md gives:
//   - AirQualityUCI.csv: 9357 records (the 114 rows of semicolons at the
//     end are blank, not records), no malformed one; 31 have every value
//     missing (-200) and carry nothing to emit.
//   - Occupancy: 2665 + 8143 + 9752 = 20560 rows, none malformed. Merged
//     by event time none is late, whatever the order of the files; read
//     one after the other in the order "training, test, test2", the 2665
//     rows of datatest.txt are older than what was released and late.
//   - ULB Library 1: 7563 + 11110 + 11029 = 29702 readings, none malformed
//     once decimal commas and R3's 0xA0 thousands separator are handled,
//     none late (time never decreases, also across files).
func TestReplayDatasets(t *testing.T) {
	ds := datasetsDir
	aq := filepath.Join(ds, "uci-airquality", "AirQualityUCI.csv")
	occ := func(name string) string { return filepath.Join(ds, "uci-occupancy", name) }
	ulb := func(name string) string { return filepath.Join(ds, "ulb-library1-wsn", name) }
	for _, tc := range []struct {
		name string
		args []string
		want string
		// written: lines written when late particles pass through,
		// out of order
		written int
	}{
		{"airquality", []string{"--format", "uci-airquality", aq},
			"summary: read=9357 emitted=9326 late=0 invalid=0 skipped=31 outside=0 duplicates=0 refused=0", 0},
		{"occupancy merged", []string{"--format", "uci-occupancy", occ("datatraining.txt"), occ("datatest.txt"), occ("datatest2.txt")},
			"summary: read=20560 emitted=20560 late=0 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", 0},
		{"occupancy concatenated", []string{"--format", "uci-occupancy", "--concat", occ("datatraining.txt"), occ("datatest.txt"), occ("datatest2.txt")},
			"summary: read=20560 emitted=17895 late=2665 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", 0},
		{"occupancy concatenated, late passed", []string{"--format", "uci-occupancy", "--concat", "--late", "pass", occ("datatraining.txt"), occ("datatest.txt"), occ("datatest2.txt")},
			"summary: read=20560 emitted=17895 late=2665 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", 20560},
		{"ulb", []string{"--format", "ulb-wsn", ulb("R3.txt"), ulb("R1.txt"), ulb("R2.txt")},
			"summary: read=29702 emitted=29702 late=0 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", 0},
		{"ulb R1 as line protocol", []string{filepath.Join("..", "..", "testdata", "library1-r1.lp")},
			"summary: read=7563 emitted=7563 late=0 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runReplay(t, append([]string{"--speed", "max"}, tc.args...)...)
			require.Equal(t, exitOK, code, stderr)
			assert.Equal(t, tc.want, lastLine(stderr))
			var emitted int
			_, err := fmt.Sscanf(tc.want[strings.Index(tc.want, "emitted="):], "emitted=%d", &emitted)
			require.NoError(t, err)
			if tc.written > 0 {
				assert.Equal(t, tc.written, strings.Count(stdout, "\n"))
				return
			}
			assert.Equal(t, emitted, strings.Count(stdout, "\n"))
			assert.True(t, ordered(t, stdout), "output in event-time order")
		})
	}
}

// ordered reports whether the lines of line protocol are in event-time
// order.
func ordered(t *testing.T, lp string) bool {
	var last int64
	for _, line := range strings.Split(strings.TrimSpace(lp), "\n") {
		var ts int64
		_, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &ts)
		require.NoError(t, err)
		if ts < last {
			return false
		}
		last = ts
	}
	return true
}

// TestReplayReadmeCommand checks the README's command: the recording
// comes out as it went in.
func TestReplayReadmeCommand(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "library1-r1.lp")
	code, stdout, stderr := runReplay(t, "--speed", "max", path)
	require.Equal(t, exitOK, code, stderr)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), stdout)
}

// TestReplayULBMatchesLineProtocol checks that R1.txt replayed with the
// ulb-wsn preset and the deployment tag is the recording in testdata.
func TestReplayULBMatchesLineProtocol(t *testing.T) {
	r1 := filepath.Join(datasetsDir, "ulb-library1-wsn", "R1.txt")
	code, stdout, stderr := runReplay(t, "--speed", "max", "--format", "ulb-wsn", "--tag", "deployment=library1", r1)
	require.Equal(t, exitOK, code, stderr)
	want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "library1-r1.lp"))
	require.NoError(t, err)
	assert.Equal(t, string(want), stdout)
}

// TestReplayMalformed checks that malformed lines are reported with file
// and line, counted and skipped.
func TestReplayMalformed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.lp")
	require.NoError(t, os.WriteFile(path, []byte("m v=1 1\nm v=2 x\nm v=3 3\nm,=x v=4 4\n"), 0o644))
	code, stdout, stderr := runReplay(t, "--speed", "max", path)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "m v=1 1\nm v=3 3\n", stdout)
	assert.Contains(t, stderr, path+":2:")
	assert.Contains(t, stderr, path+":4:")
	assert.Equal(t, "summary: read=4 emitted=2 late=0 invalid=2 skipped=0 outside=0 duplicates=0 refused=0", lastLine(stderr))
}

// TestReplayOptions covers flags after files, the time range, CSV with
// column flags, the late side output and output to a file.
func TestReplayOptions(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "readings.txt")
	require.NoError(t, os.WriteFile(csv, []byte(
		"when;where;temp\n2024-01-01 00:00:00;a;1,5\n2024-01-01 00:00:02;b;NA\n2024-01-01 00:00:01;a;2,5\n2024-01-01 00:00:03;b;3\n"), 0o644))
	out := filepath.Join(dir, "out.lp")
	lateOut := filepath.Join(dir, "late.lp")
	code, stdout, stderr := runReplay(t, csv, "--speed", "max", "--separator", ";", "--decimal-comma", "--missing", "NA",
		"--time", "when", "--tags", "where", "--fields", "temp:float", "--measurement", "t", "--tz", "+01:00",
		"--from", "2023-12-31T23:00:01Z", "--to", "1704063603000000000",
		"--late", "side", "--late-out", lateOut, "--out", out)
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, stdout)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	// In UTC the rows are 23:00:00 (before --from), 23:00:02 (no value),
	// 23:00:01 and 23:00:03 (at --to, outside).
	assert.Equal(t, "t,where=a temp=2.5 1704063601000000000\n", string(got))
	late, err := os.ReadFile(lateOut)
	require.NoError(t, err)
	assert.Empty(t, string(late))
	assert.Contains(t, stderr, "skipped=1 outside=2")
	assert.Equal(t, "summary: read=4 emitted=1 late=0 invalid=0 skipped=1 outside=2 duplicates=0 refused=0", lastLine(stderr))
}

// TestReplayLateSide checks that with -late side the late particles go to
// -late-out. The first file is long enough for some of it to be released
// before the second file's old reading arrives.
func TestReplayLateSide(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.lp")
	b := filepath.Join(dir, "b.lp")
	var lines strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&lines, "m v=%d %d\n", i, 10+i)
	}
	require.NoError(t, os.WriteFile(a, []byte(lines.String()), 0o644))
	require.NoError(t, os.WriteFile(b, []byte("m old=1 5\nm v=4 100000\n"), 0o644))
	lateOut := filepath.Join(dir, "late.lp")
	code, stdout, stderr := runReplay(t, "--speed", "max", "--concat", "--late", "side", "--late-out", lateOut, a, b)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stdout, "old")
	late, err := os.ReadFile(lateOut)
	require.NoError(t, err)
	assert.Equal(t, "m old=1 5\n", string(late))
	assert.Equal(t, "summary: read=1002 emitted=1001 late=1 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", lastLine(stderr))
}

func TestReplayUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{nil, "no files to replay"},
		{[]string{"--speed", "fast", "x.lp"}, "-speed"},
		{[]string{"--speed", "20000", "x.lp"}, "-speed"},
		{[]string{"--format", "parquet", "x.lp"}, "parquet"},
		{[]string{"--from", "yesterday", "x.lp"}, "RFC 3339"},
		{[]string{"--measurement", "m", "x.lp"}, "delimited"},
		{[]string{"--late", "never", "x.lp"}, "-late"},
		{[]string{"--late", "side", "x.lp"}, "--late side needs --late-out FILE"},
		{[]string{"--late-out", "l.lp", "x.lp"}, "--late-out needs --late side"},
		{[]string{"--window", "5", "x.lp"}, `invalid value "5" for flag -window: a duration needs a unit: 5s, 5ms or 5m`},
		{[]string{"--window", "soon", "x.lp"}, "want a duration such as 500ms, 2s, 1m30s or 1h"},
		{[]string{"--control", "localhost", "x.lp"}, "--control: want HOST:PORT"},
		{[]string{"--loop", "-"}, "--loop cannot replay standard input again"},
		{[]string{"--log-format", "xml", "x.lp"}, "want text or json"},
	} {
		code, stdout, stderr := runReplay(t, tc.args...)
		assert.Equal(t, exitUsage, code, "%q", tc.args)
		assert.Empty(t, stdout, "%q", tc.args)
		assert.Contains(t, stderr, tc.want, "%q", tc.args)
		assert.Contains(t, stderr, `Run "sensorstorm help replay" for usage.`, "%q", tc.args)
	}
	code, _, stderr := runReplay(t, "--speed", "max", filepath.Join(t.TempDir(), "missing.lp"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "missing.lp")
}

// TestReplayControlEndpoint checks that -control serves while the replay
// runs and is shut down after it.
func TestReplayControlEndpoint(t *testing.T) {
	code, _, stderr := runReplay(t, "--speed", "max", "--control", "127.0.0.1:0", filepath.Join("..", "..", "testdata", "library1-r1.lp"))
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "replay: control on http://127.0.0.1:")
	assert.Equal(t, "summary: read=7563 emitted=7563 late=0 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", lastLine(stderr))
}

func TestReplayKeys(t *testing.T) {
	src, err := replaysrc.New(replaysrc.Config{Inputs: []replaysrc.Input{{Path: "x.lp"}}, Speed: 10})
	require.NoError(t, err)
	quit := 0
	for _, step := range []struct {
		key    byte
		speed  replaysrc.Speed
		paused bool
	}{
		{'+', 20, false}, {'-', 10, false}, {'-', 5, false}, {' ', 5, true}, {'+', 10, true}, {'p', 10, false},
		{'m', replaysrc.Max, false}, {'+', replaysrc.Max, false}, {'-', 10000, false}, {'+', 10000, false}, {'1', 1, false},
		{'x', 1, false},
	} {
		applyKey(step.key, src, func() { quit++ })
		st := src.Status()
		assert.Equal(t, step.speed, st.Speed, "after %q", step.key)
		assert.Equal(t, step.paused, st.Paused, "after %q", step.key)
	}
	applyKey('q', src, func() { quit++ })
	applyKey(3, src, func() { quit++ })
	assert.Equal(t, 2, quit)
}

// TestProgressFollowsEventTime checks that the bar's percent is the
// event-time position within the replay's span, whatever the bytes read
// ahead: 12% of the file read at the start is 0%.
func TestProgressFollowsEventTime(t *testing.T) {
	first := time.Date(2006, 11, 13, 18, 0, 0, 0, time.UTC)
	st := replaysrc.Status{First: first, Last: first.Add(6 * time.Hour), BytesRead: 120, BytesTotal: 1000}
	assert.True(t, spanKnown(st))
	assert.Equal(t, int64(0), eventProgress(st))
	st.Position = first.Add(90 * time.Minute)
	assert.Equal(t, int64(250), eventProgress(st))
	st.Position = first.Add(7 * time.Hour)
	assert.Equal(t, int64(permille), eventProgress(st))
	assert.False(t, spanKnown(replaysrc.Status{}))
}

// TestReplayStoppedEarlyAddsUp stops a paced replay as q or Ctrl-C does:
// the record waiting for its time is not replayed, and the summary leaves
// it out, says so, and adds up.
func TestReplayStoppedEarlyAddsUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.lp")
	require.NoError(t, os.WriteFile(path, []byte("m v=1 1000000000000000000\nm v=2 1000000100000000000\nm v=3 1000000200000000000\n"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr mosquittotest.LockedBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"replay", "--speed", "1", "--control", "127.0.0.1:0", path}, &stdout, &stderr)
	}()
	control := regexp.MustCompile(`control on (http://\S+)`)
	require.Eventually(t, func() bool {
		m := control.FindStringSubmatch(stderr.String())
		if m == nil {
			return false
		}
		resp, err := http.Get(m[1] + "/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st replaysrc.Status
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.Emitted == 1
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.Equal(t, exitOK, <-done, stderr.String())
	assert.Equal(t, "m v=1 1000000000000000000\n", stdout.String())
	assert.Contains(t, stderr.String(), "replay stopped early: position=2001-09-09T01:46:40Z unreplayed=1\n")
	assert.Equal(t, "summary: read=1 emitted=1 late=0 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", lastLine(stderr.String()))
}
