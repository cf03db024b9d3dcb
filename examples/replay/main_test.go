package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Readings delivered out of order come out in windows as if in order; the
// one later than the window is counted and left out.
func TestReplayReordersAndCountsLate(t *testing.T) {
	lp := strings.Join([]string{
		"wsn,node=1 temperature=21 1001000000000",
		"wsn,node=2 temperature=23 1000000000000", // 1 s behind: reordered
		"wsn,node=1 temperature=22 1006000000000", // second window
		"wsn,node=2 temperature=99 997000000000",  // 9 s behind: late
		"wsn,node=2 temperature=24 1012000000000",
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "disordered.lp")
	require.NoError(t, os.WriteFile(path, []byte(lp), 0o644))
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"-every", "5s", "-window", "2s", path}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Equal(t, `temperature of the whole network over 5s windows, in event-time order
window end (UTC)     readings    mean     min     max
1970-01-01 00:16:45         2   22.00   21.00   23.00
1970-01-01 00:16:50         1   22.00   22.00   22.00
1970-01-01 00:16:55         1   24.00   24.00   24.00
5 readings: 4 in windows, 1 more than 2s late, dropped
`, stdout.String())
}

// The shipped disordered recording: the README's figures.
func TestReplayShippedRecording(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"../../testdata/library1-disordered.lp"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "2006-11-13 17:30:00       185   21.87   21.26   22.35\n")
	assert.Contains(t, stdout.String(), "2236 readings: 2189 in windows, 47 more than 30s late, dropped\n")
}
