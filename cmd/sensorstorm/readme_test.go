package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeCommand is a command of the README: an indented line running the
// command, continued with backslashes.
var readmeCommand = regexp.MustCompile(`(?m)^    go run \./cmd/sensorstorm ((?:.*\\\n)*.*)$`)

// TestReadmeWalk runs the README's commands as a newcomer would, from the
// repository's root, and checks they exit 0: those that need no server
// (ingest needs a broker), with a status page on a free port and output
// to a temporary directory. The README's pipeline example must validate.
func TestReadmeWalk(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	dir := t.TempDir()
	t.Chdir("../..")
	matches := readmeCommand.FindAllStringSubmatch(string(readme), -1)
	require.GreaterOrEqual(t, len(matches), 4)
	assert.Equal(t, "run pipelines/demo.yaml", matches[0][1], "the first command is the demo")
	for _, m := range matches {
		args := strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))
		if args[0] == "ingest" {
			continue
		}
		for i, a := range args {
			switch {
			case a == "localhost:8088":
				args[i] = "127.0.0.1:0"
			case i > 0 && args[i-1] == "--out":
				args[i] = filepath.Join(dir, a)
			case a == "--speed" && args[i+1] != "max":
				args[i+1] = "max"
			}
		}
		var stdout, stderr strings.Builder
		code := run(context.Background(), args, &stdout, &stderr)
		assert.Equal(t, exitOK, code, "%q: %s", args, stderr.String())
		if args[0] != "validate" {
			assert.Contains(t, stderr.String(), "summary: read=", "%q", args)
		}
	}

	yaml := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(string(readme))
	require.NotNil(t, yaml)
	// Its paths are those of a file in pipelines/.
	pipeline := filepath.Join(dir, "example.yaml")
	require.NoError(t, os.WriteFile(pipeline, []byte(yaml[1]), 0o644))
	var stdout, stderr strings.Builder
	assert.Equal(t, exitOK, run(context.Background(), []string{"validate", "--dir", "pipelines", pipeline}, &stdout, &stderr), stderr.String())
}
