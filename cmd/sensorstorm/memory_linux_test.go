package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
)

// lineOverhead is what reading a line of up to the maximum may cost on
// top of a replay of short lines: the line in the reader's block, in the
// decoder's buffer and in line protocol's own, each grown by doubling, so
// at most about 2x the maximum each.
const lineOverhead = 8 * particle.DefaultMaxLineLength

// replayRSS runs the built command's replay on path, killed after timeout
// if it has not ended, and returns its peak resident set size in bytes,
// its standard output and its dead letters.
func replayRSS(t *testing.T, bin, path string, timeout time.Duration) (rss int64, stdout string, dead []file.DeadLetterRecord) {
	t.Helper()
	dir := t.TempDir()
	deadPath := filepath.Join(dir, "dead.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "replay", "--speed", "max", "--dead-letter", deadPath, path)
	var out strings.Builder
	cmd.Stdout = &out
	_ = cmd.Run() // the exit code is the callers' to judge
	usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	require.True(t, ok)
	if f, err := os.Open(deadPath); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec file.DeadLetterRecord
			require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
			dead = append(dead, rec)
		}
		require.NoError(t, sc.Err())
	}
	return usage.Maxrss << 10, out.String(), dead // Maxrss is in KiB on Linux
}

// TestLongLinesMemoryBounded replays, in a child process, a file with a
// line of 300 MB between two good ones, and /dev/zero, one endless line:
// the peak RSS stays within that of a replay of short lines plus
// lineOverhead, the long line is one dead letter with its prefix, source
// and line number, and the lines around it come out.
func TestLongLinesMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 300 MB file")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	small := filepath.Join(dir, "small.lp")
	require.NoError(t, os.WriteFile(small, []byte("m v=1 1\nm v=3 3\n"), 0o600))
	base, _, _ := replayRSS(t, bin, small, time.Minute)

	long := filepath.Join(dir, "long.lp")
	f, err := os.Create(long)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	_, err = w.WriteString("m v=1 1\nm s=\"")
	require.NoError(t, err)
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range 300 {
		_, err = w.Write(chunk)
		require.NoError(t, err)
	}
	_, err = w.WriteString("\" 2\nm v=3 3\n")
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())

	rss, out, dead := replayRSS(t, bin, long, 2*time.Minute)
	t.Logf("peak RSS: %d MiB for short lines, %d MiB with a 300 MB line; bound %d MiB", base>>20, rss>>20, (base+lineOverhead)>>20)
	assert.LessOrEqual(t, rss, base+lineOverhead)
	assert.Equal(t, "m v=1 1\nm v=3 3\n", out)
	require.Len(t, dead, 1)
	assert.Equal(t, long, dead[0].Source)
	assert.Equal(t, 2, dead[0].Line)
	assert.Contains(t, dead[0].Error, particle.ErrLineTooLong.Error())
	assert.True(t, strings.HasPrefix(dead[0].Payload, `m s="xxx`))
	assert.LessOrEqual(t, len(dead[0].Payload), 64<<10)

	rss, _, _ = replayRSS(t, bin, "/dev/zero", 5*time.Second)
	t.Logf("peak RSS: %d MiB reading /dev/zero for 5 s; bound %d MiB", rss>>20, (base+lineOverhead)>>20)
	assert.LessOrEqual(t, rss, base+lineOverhead)
}
