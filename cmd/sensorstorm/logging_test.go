package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLimitHandler logs 1234 records of one kind: the first 5 show, then
// those at 10, 100 and 1000 with their count, and Summarize gives the
// total. Long values are cut.
func TestLimitHandler(t *testing.T) {
	var out bytes.Buffer
	l := logFlags{format: "json"}
	logger, logs := l.logger(&out)
	logger = logger.With("component", "replay")
	bad := errors.New("bad line " + strings.Repeat("x", 10<<20))
	for range 1234 {
		logger.Warn("dead letter", "err", bad)
	}
	logger.Info("other")
	logs.Summarize(context.Background())

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Len(t, lines, 5+3+1+1)
	for _, line := range lines {
		assert.Less(t, len(line), 500)
	}
	assert.Contains(t, lines[0], `"err":"bad line xxx`)
	assert.Contains(t, lines[0], `... (10485769 bytes)"`)
	assert.Contains(t, lines[5], `"repeated":10`)
	assert.Contains(t, lines[7], `"repeated":1000`)
	assert.Contains(t, lines[8], `"msg":"other"`)
	assert.Contains(t, lines[9], `"repeated":1234,"final":true`)
}
