package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	replaysrc "github.com/sensorstorm/sensorstorm/connectors/replay"
)

// runCmd runs a command line with stdin and returns its exit code, stdout
// and stderr.
func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runIO(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestHelp checks that every command prints its usage to stdout and exits
// 0 for -h, --help and "help COMMAND", with the logging flags.
func TestHelp(t *testing.T) {
	for _, c := range commands(nil) {
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			code, stdout, stderr := runCmd(t, "", args...)
			assert.Equal(t, exitOK, code, "%q", args)
			assert.Empty(t, stderr, "%q", args)
			if c.name == "help" {
				assert.Contains(t, stdout, "Commands:", "%q", args)
				continue
			}
			assert.Contains(t, stdout, "usage: sensorstorm "+c.name, "%q", args)
			assert.Contains(t, stdout, "\n  --log-level LEVEL", "%q: the README's flag style", args)
			assert.Contains(t, stdout, "\n  --log-format FORMAT", "%q", args)
		}
	}
	code, stdout, _ := runCmd(t, "", "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "help [COMMAND]")
	code, _, stderr := runCmd(t, "", "help", "nosuch")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `unknown command "nosuch"`)
}

// TestFlagsAfterArguments checks that flags may follow the positional
// arguments, and that "--" ends the flags.
func TestFlagsAfterArguments(t *testing.T) {
	c := newCLI("x", "usage: x\n", &bytes.Buffer{})
	n := c.fs.Int("n", 0, "")
	rest, _, ok := c.parse([]string{"a", "-n", "3", "b", "--log-level", "warn", "--", "-n", "c"}, &bytes.Buffer{})
	require.True(t, ok)
	assert.Equal(t, []string{"a", "b", "-n", "c"}, rest)
	assert.Equal(t, 3, *n)
	assert.Equal(t, "WARN", c.log.level.String())

	code, stdout, stderr := runCmd(t, "", "validate", "../../pipelines/library1-mean.yaml", "--log-level", "warn")
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, ": ok")
}

func TestMissingRequiredFlag(t *testing.T) {
	code, _, stderr := runCmd(t, "", "ingest", "--broker", "tcp://localhost:1")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "missing required flag --topic")
	code, _, stderr = runCmd(t, "", "bench")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "missing required flag --broker")
	code, _, stderr = runCmd(t, "", "ingest", "--broker", "tcp://localhost:1", "--topic", "a", "--window", "5")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "a duration needs a unit")
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runCmd(t, "", "version")
	assert.Equal(t, exitOK, code)
	assert.True(t, strings.HasPrefix(stdout, "sensorstorm "), stdout)
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"},
			{Key: "vcs.time", Value: "2026-12-06T03:00:00Z"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"}}}
	assert.Equal(t, "sensorstorm v1.2.3 abc123+dirty 2026-12-06T03:00:00Z go1.26.8 linux/amd64", versionLine(info, true))
	assert.Equal(t, "sensorstorm devel (revision unknown: built with -buildvcs=false or outside a git checkout) go1.26.8 linux/amd64",
		versionLine(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: info.Settings[3:]}, true))
}

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		"9090":           "localhost:9090",
		":9090":          "localhost:9090",
		"localhost:9090": "localhost:9090",
		"0.0.0.0:9090":   "0.0.0.0:9090",
		"[::]:9090":      "[::]:9090",
		"127.0.0.1:0":    "127.0.0.1:0",
	} {
		got, err := listenAddr(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"localhost", "99999", "a:b:c"} {
		_, err := listenAddr(bad)
		assert.Error(t, err, bad)
	}
}

func TestReplayStdin(t *testing.T) {
	code, stdout, stderr := runCmd(t, "m v=2 2\nm v=1 1\n", "replay", "--speed", "max", "--window", "1s", "-")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "m v=1 1\nm v=2 2\n", stdout)
	assert.Equal(t, "summary: read=2 emitted=2 late=0 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", lastLine(stderr))
}

// TestReplayUnterminatedQuote is the recording of the issue: one line with
// a quote left open among 12040 takes only itself.
func TestReplayUnterminatedQuote(t *testing.T) {
	var in strings.Builder
	for i := range 12040 {
		if i == 8729 {
			in.WriteString("env t=\"unterminated\n")
			continue
		}
		in.WriteString("env,node=1 t=1 " + strconv.Itoa(i) + "\n")
	}
	path := filepath.Join(t.TempDir(), "rec.lp")
	require.NoError(t, os.WriteFile(path, []byte(in.String()), 0o644))
	code, _, stderr := runReplay(t, "--speed", "max", "--window", "1s", path)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, path+":8730:7: particle: string field value not closed before the end of the line")
	assert.Equal(t, "summary: read=12040 emitted=12039 late=0 invalid=1 skipped=0 outside=0 duplicates=0 refused=0", lastLine(stderr))
}

// TestReplayAllInvalid checks that input that is all invalid fails the
// command: a CSV file read as line protocol, a gzip file without .gz.
func TestReplayAllInvalid(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "data.lp")
	require.NoError(t, os.WriteFile(csv, []byte("time,v\n1,2\n2,3\n"), 0o644))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	for i := range 200 {
		zw.Write([]byte("m,node=" + strconv.Itoa(i) + " v=1 " + strconv.Itoa(i) + "\n"))
	}
	require.NoError(t, zw.Close())
	zipped := filepath.Join(dir, "data.lp.bak")
	require.NoError(t, os.WriteFile(zipped, gz.Bytes(), 0o644))
	for _, path := range []string{csv, zipped} {
		code, _, stderr := runReplay(t, "--speed", "max", path)
		assert.Equal(t, exitError, code, stderr)
		assert.Contains(t, lastLine(stderr), "sensorstorm: no valid input")
		assert.Less(t, strings.Count(stderr, "\n"), 20, "repeated errors are limited:\n%s", stderr)
	}
	code, _, stderr := runReplay(t, "--speed", "max", "--format", "csv", csv)
	assert.Equal(t, exitOK, code, stderr)
}

func TestReplayDeadLetterFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.lp")
	require.NoError(t, os.WriteFile(in, []byte("m v=1 1\nenv t=\"open\nm v=\xff 3\n"), 0o644))
	dl := filepath.Join(dir, "dead.jsonl")
	code, _, stderr := runReplay(t, "--speed", "max", in, "--dead-letter", dl)
	require.Equal(t, exitOK, code, stderr)
	b, err := os.ReadFile(dl)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2)
	var first, second file.DeadLetterRecord
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	assert.Equal(t, file.DeadLetterRecord{Component: "replay", Reason: "invalid", Source: in, Line: 2, Column: 7,
		Error:   "particle: decode " + in + ":2:7: particle: string field value not closed before the end of the line",
		Payload: `env t="open`}, first)
	assert.Equal(t, 3, second.Line)
	assert.Equal(t, []byte("m v=\xff 3"), second.PayloadBase64)
}

// FuzzFlagValues feeds the command line's own value parsers: they never
// panic, and an address they accept is complete and stays as it is.
func FuzzFlagValues(f *testing.F) {
	for _, s := range []string{"9090", ":9090", "0.0.0.0:9090", "[::1]:80", "5", "1m30s", "2024-01-01T00:00:00Z", "-1", "k=v", "=", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if addr, err := listenAddr(s); err == nil {
			again, err := listenAddr(addr)
			require.NoError(t, err, addr)
			require.Equal(t, addr, again)
		}
		var d time.Duration
		_ = (*durationFlag)(&d).Set(s)
		_, _ = replaysrc.ParseInstant(s)
		var tags tagFlag
		if tags.Set(s) == nil {
			require.Equal(t, s, tags.String())
		}
	})
}

// TestOutTruncatesUnlessAppend runs replay twice into one file: the
// second run replaces the first's output, or with --append adds to it.
func TestOutTruncatesUnlessAppend(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.lp"), filepath.Join(dir, "out.lp")
	require.NoError(t, os.WriteFile(in, []byte("m v=1 1\nm v=2 2\n"), 0o644))
	for range 2 {
		code, _, stderr := runCmd(t, "", "replay", "--speed", "max", "--out", out, in)
		require.Equal(t, exitOK, code, stderr)
	}
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "m v=1 1\nm v=2 2\n", string(got))
	code, _, stderr := runCmd(t, "", "replay", "--speed", "max", "--out", out, "--append", in)
	require.Equal(t, exitOK, code, stderr)
	got, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "m v=1 1\nm v=2 2\nm v=1 1\nm v=2 2\n", string(got))
}

// TestJSONToTheLastLine checks that with --log-format json every line on
// stderr is JSON, the summary included, with durations as text.
func TestJSONToTheLastLine(t *testing.T) {
	for _, args := range [][]string{
		{"run", "../../pipelines/demo.yaml"},
		{"replay", "--speed", "max", "--window", "30s", "--control", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "../../testdata/library1-disordered.lp"},
	} {
		code, _, stderr := runCmd(t, "", append(args, "--log-format", "json")...)
		require.Equal(t, exitOK, code, stderr)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		for _, line := range lines {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec), "%s: %s", args[0], line)
			if d, ok := rec["elapsed"]; ok {
				assert.IsType(t, "", d, line)
			}
		}
		var sum map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum))
		assert.Equal(t, "summary", sum["msg"], args[0])
		assert.Equal(t, 2236.0, sum["read"], args[0])
		assert.Equal(t, 47.0, sum["late"], args[0])
	}
}
