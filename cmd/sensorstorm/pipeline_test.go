package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidatePipeline(t *testing.T) {
	var stdout, stderr strings.Builder
	shipped, err := filepath.Glob("../../pipelines/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, shipped)
	for _, p := range shipped {
		// Paths in the shipped pipelines are relative to the repository root.
		require.Equal(t, exitOK, run(context.Background(), []string{"validate", p}, &stdout, &stderr), stderr.String())
		assert.Contains(t, stdout.String(), p+": ok")
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("sources:\n  - name: a\n    file: {paths: [x.lp]}\nbolts:\n  - name: b\n    input: a\n    op: {type: window-men}\n"), 0o644))
	stderr.Reset()
	assert.Equal(t, exitError, run(context.Background(), []string{"validate", bad}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), bad+`:7:16: bolt "b": unknown op type "window-men"`)
}

func TestRunPipelineServesMetrics(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"run", "--metrics-addr", "127.0.0.1:0", "../../pipelines/library1-mean.yaml"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	assert.Equal(t, 779, strings.Count(stdout.String(), "\n"), "19 motes, 41 ten-minute windows, less the missing readings")
	assert.Contains(t, stderr.String(), "serving metrics")
	assert.Contains(t, stderr.String(), `component=out in=779 out=0`, "meta particles are not counted")
	assert.Equal(t, "summary: read=7563 emitted=7563 late=0 invalid=0 skipped=0 outside=0 duplicates=0 refused=0", lastLine(stderr.String()))
}
