package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Five seconds of two sensors replayed at 100x: a twentieth of a second.
func TestReplayAtSpeed(t *testing.T) {
	var lp strings.Builder
	for i := range 10 {
		fmt.Fprintf(&lp, "wsn,node=%d temperature=%d %d\n", i%2, 20+i, int64(1e12)+int64(i)*5e8)
	}
	path := filepath.Join(t.TempDir(), "short.lp")
	require.NoError(t, os.WriteFile(path, []byte(lp.String()), 0o644))
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"-speed", "100", "-every", "10s", path}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	// Results at the same time come in the order of their identities,
	// which derive from their inputs': the same in every run.
	assert.Equal(t, "wsn,node=1 temperature_count=5i 1010000\nwsn,node=0 temperature_count=5i 1010000\n", stdout.String())
	assert.Contains(t, stderr.String(), "replayed 10 particles at 100x")
}
