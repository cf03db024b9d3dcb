package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
)

// summaryLine matches the summary line and captures its counts.
var summaryLine = regexp.MustCompile(`(?m)^summary: read=(\d+) emitted=(\d+) late=(\d+) invalid=(\d+) skipped=(\d+) outside=(\d+) duplicates=(\d+) refused=(\d+)$`)

// counts are the figures of a summary line.
type counts struct {
	read, emitted, late, invalid, skipped, outside, duplicates, refused int
}

// parseSummary returns the counts of the summary line in stderr, and
// checks that every record read is accounted for once.
func parseSummary(t *testing.T, stderr string) counts {
	t.Helper()
	m := summaryLine.FindStringSubmatch(stderr)
	require.NotNil(t, m, "no summary line in:\n%s", stderr)
	n := make([]int, len(m)-1)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	c := counts{n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]}
	assert.Equal(t, c.read, c.emitted+c.late+c.invalid+c.skipped+c.outside+c.duplicates,
		"read = emitted + late + invalid + skipped + outside + duplicates: %s", m[0])
	return c
}

// deadLetter is what the accounting tests read of a dead letter.
type deadLetter struct {
	Component string `json:"component"`
	Reason    string `json:"reason"`
	Source    string `json:"source"`
	Line      int    `json:"line"`
	Error     string `json:"error"`
	Payload   string `json:"payload"`
}

// readDeadLetters returns the dead letters of the --dead-letter file.
func readDeadLetters(t *testing.T, path string) []deadLetter {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []deadLetter
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var d deadLetter
		require.NoError(t, json.Unmarshal(sc.Bytes(), &d), sc.Text())
		out = append(out, d)
	}
	require.NoError(t, sc.Err())
	return out
}

// TestReplayAccountsForEveryRecord replays a mix of good, late, malformed,
// wild and non-finite records from a line-protocol and a CSV file: the
// summary adds up, each bad record is dead-lettered where it was read,
// with its file, line and text, and nothing fails in the sink.
func TestReplayAccountsForEveryRecord(t *testing.T) {
	dir := t.TempDir()
	lp := filepath.Join(dir, "a.lp")
	csv := filepath.Join(dir, "b.csv")
	// Event time s seconds after 2024-01-01.
	at := func(s float64) int64 { return 1704067200e9 + int64(s*1e9) }
	require.NoError(t, os.WriteFile(lp, fmt.Appendf(nil, strings.Join([]string{
		"m v=1 %d",    // good
		"m v=2 %d",    // good
		"m v=oops %d", // malformed
		"m v=3 %d",    // late: older than its input's newest
		"m v=4 %d",    // wild: far beyond the future bound
		"m v=5 %d",    // good
	}, "\n")+"\n", at(1), at(3), at(3.1), at(2), at(1e6), at(4)), 0o644))
	require.NoError(t, os.WriteFile(csv, []byte("time,v\n"+
		"2024-01-01T00:00:01.5Z,NaN\n"+
		"2024-01-01T00:00:02.5Z,-Inf\n"+
		"2024-01-01T00:00:03.5Z,7\n"), 0o644))
	dead := filepath.Join(dir, "dead.jsonl")
	code, stdout, stderr := runReplay(t, "--speed", "max", "--dead-letter", dead, lp, csv)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, fmt.Sprintf("m v=1 %d\nm v=2 %d\nb v=7 %d\nm v=5 %d\n", at(1), at(3), at(3.5), at(4)), stdout)
	assert.Equal(t, counts{read: 9, emitted: 4, late: 1, invalid: 4}, parseSummary(t, stderr))

	type where struct {
		source string
		line   int
		reason string
	}
	var got []where
	for _, d := range readDeadLetters(t, dead) {
		got = append(got, where{d.Source, d.Line, d.Reason})
		if d.Reason == "invalid" {
			assert.NotEmpty(t, d.Payload, "dead letter without its text: %+v", d)
		}
	}
	assert.ElementsMatch(t, []where{
		{csv, 2, "invalid"}, {csv, 3, "invalid"}, {lp, 3, "invalid"},
		// The wild record is judged by the next one, where the merged
		// files have no one position.
		{"", 0, "invalid"},
	}, got)
}

// TestIngestAccountsForEveryReading publishes a mix of readings to ingest:
// good, late, malformed, non-finite, beyond the future bound, and on a
// topic whose tag line protocol cannot hold. The summary adds up; each bad
// reading is dead-lettered by the source, with its topic, line and payload,
// and acknowledged; nothing fails in the sink.
func TestIngestAccountsForEveryReading(t *testing.T) {
	broker := mosquittotest.Start(t, mosquittotest.Config{})
	dir := t.TempDir()
	out := filepath.Join(dir, "out.lp")
	dead := filepath.Join(dir, "dead.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &mosquittotest.LockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ingest", "--broker", broker.URL(), "--topic", "sensors/#", "--client-id", "accounting",
			"--topic-tags", "sensors/{room}", "--window", "100ms", "--late", "drop", "--dead-letter", dead,
			"--state-dir", filepath.Join(dir, "state"), "--out", out, "--append"}, io.Discard, stderr)
	}()
	waitUntil(t, 20*time.Second, "ingest connected", func() bool { return strings.Contains(stderr.String(), "mqtt: connected") })

	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("accounting-publisher"))
	require.True(t, pub.Connect().WaitTimeout(10*time.Second))
	defer pub.Disconnect(100)
	base := time.Now().UnixNano()
	at := func(d time.Duration) int64 { return base + int64(d) }
	for _, m := range [][2]string{
		{"sensors/a", fmt.Sprintf("m n=1i %d", at(0))},                                           // good
		{"sensors/a", fmt.Sprintf("m n=2i %d", at(2*time.Second))},                               // good
		{"sensors/a", fmt.Sprintf("m n=3i %d", at(time.Second))},                                 // late, dropped
		{"sensors/a", fmt.Sprintf("m n=oops %d", at(2*time.Second))},                             // malformed
		{"sensors/a", fmt.Sprintf("m n=4i,v=NaN %d", at(2*time.Second))},                         // no NaN in line protocol
		{"sensors/a", fmt.Sprintf("m n=5i %d", at(3*time.Hour))},                                 // beyond the future bound
		{`sensors/a\`, fmt.Sprintf("m n=6i %d", at(2500*time.Millisecond))},                      // a tag ending in a backslash
		{"sensors/b", fmt.Sprintf("m n=7i %d", at(3*time.Second))},                               // good
		{"sensors/b", fmt.Sprintf("m n=8i %d\nm n=9i %d", at(4*time.Second), at(5*time.Second))}, // good, two lines
		// Malformed too, and last: once it is dead-lettered, the source
		// has taken every message before it.
		{"sensors/b", "last"},
	} {
		require.True(t, pub.Publish(m[0], 1, false, m[1]).WaitTimeout(10*time.Second))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ingest's log:\n%s", stderr.String())
		}
	})
	waitUntil(t, 20*time.Second, "every reading handled", func() bool {
		return len(readDeadLetters(t, dead)) >= 5
	})
	cancel()
	assert.Equal(t, exitOK, <-done, stderr.String())

	assert.Equal(t, map[int]int{1: 1, 2: 1, 7: 1, 8: 1, 9: 1}, readOutput(t, out))
	log := stderr.String()
	assert.Equal(t, counts{read: 11, emitted: 5, late: 1, invalid: 5}, parseSummary(t, log))
	assert.Regexp(t, `ingest: messages=10 written=5 .*acked=10 failed=0 `, log)
	var sources []string
	for _, d := range readDeadLetters(t, dead) {
		assert.NotEqual(t, "failed", d.Reason, "a sink failed a reading: %+v", d)
		if d.Reason != "invalid" {
			continue
		}
		assert.Equal(t, "mqtt", d.Component, "%+v", d)
		sources = append(sources, d.Source)
		if d.Source == `sensors/a\` {
			assert.Equal(t, 1, d.Line)
			assert.Contains(t, d.Error, `invalid tag value room="a\\"`)
			assert.Contains(t, d.Payload, "m n=6i ")
		}
	}
	// The reading beyond the future bound is rejected by the engine, after
	// decoding: it has no topic.
	assert.ElementsMatch(t, []string{"sensors/a", "sensors/a", "", `sensors/a\`, "sensors/b"}, sources)
}
