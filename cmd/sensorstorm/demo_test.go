package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var disordered = filepath.Join("..", "..", "testdata", "library1-disordered.lp")

// TestDisorderedRecording checks that the demo recording is what its notes
// say: the first two hours of library1-r1.lp, every line unchanged, in
// another order.
func TestDisorderedRecording(t *testing.T) {
	got, err := os.ReadFile(disordered)
	require.NoError(t, err)
	r1, err := os.ReadFile(filepath.Join("..", "..", "testdata", "library1-r1.lp"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	require.Len(t, lines, 2236)
	assert.False(t, ordered(t, string(got)))
	want := strings.Split(string(r1), "\n")[:len(lines)]
	slices.Sort(lines)
	slices.Sort(want)
	assert.Equal(t, want, lines)
}

// TestDemoPipeline runs the README's first command: order restored, the
// readings later than the window counted, one line per ten-minute window.
func TestDemoPipeline(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"run", "../../pipelines/demo.yaml"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	assert.Equal(t, 13, strings.Count(stdout.String(), "\n"), "two hours from 17:14: 13 ten-minute windows")
	assert.Contains(t, stdout.String(), "wsn temperature_count=185i,temperature_mean=21.871783783783776,temperature_min=21.26,temperature_max=22.35 1163439000\n")
	assert.Contains(t, stderr.String(), "component=stats10m in=2236 out=13 late=47")
	assert.Equal(t, "summary: read=2236 emitted=2189 late=47 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", lastLine(stderr.String()))
}

// TestReplayDisordered replays the demo recording with a window: the output
// is in event-time order and holds every reading but the late ones.
func TestReplayDisordered(t *testing.T) {
	code, stdout, stderr := runReplay(t, "--speed", "max", "--window", "30s", disordered)
	require.Equal(t, exitOK, code, stderr)
	assert.True(t, ordered(t, stdout))
	assert.Equal(t, 2189, strings.Count(stdout, "\n"))
	assert.Equal(t, "summary: read=2236 emitted=2189 late=47 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", lastLine(stderr))
}
