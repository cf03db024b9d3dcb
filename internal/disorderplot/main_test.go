package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const benchOutput = `goos: linux
BenchmarkReplayDisorder/disorder=0-2     3  300000000 ns/op  71.10 MB/s  3000000 particles/s  181310400 B/op  18474 allocs/op
BenchmarkReplayDisorder/disorder=1m-2    3  600000000 ns/op  42.44 MB/s  1500000 particles/s  201148744 B/op  64167 allocs/op
BenchmarkReplayDisorder/disorder=0-2     3  300000000 ns/op  71.10 MB/s  1000000 particles/s  181310400 B/op  18474 allocs/op
BenchmarkReplayDisorder/disorder=0       3  300000000 ns/op  71.10 MB/s  2000000 particles/s  181310400 B/op  18474 allocs/op
BenchmarkReplay-2                        3  300000000 ns/op  71.10 MB/s  9000000 particles/s
PASS
`

// TestRun reads benchmark output and writes the table, each level's
// median, range and share of the in-order median, and an SVG that parses.
func TestRun(t *testing.T) {
	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "levels in first-seen order", in: benchOutput, want: `| disorder | particles/s (median) | least – most | of the in-order rate | runs |
|---|---|---|---|---|
| 0 | 2.00M | 1.00M – 3.00M | 1.00 | 3 |
| 1m | 1.50M | 1.50M – 1.50M | 0.75 | 1 |
`},
		{name: "no benchmark lines", in: "PASS\n", wantErr: "no BenchmarkReplayDisorder line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plot.svg")
			var out strings.Builder
			err := run(strings.NewReader(tt.in), &out, path)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, out.String())
			plot, err := os.ReadFile(path)
			require.NoError(t, err)
			d := xml.NewDecoder(strings.NewReader(string(plot)))
			for {
				_, err := d.Token()
				if err != nil {
					assert.Equal(t, "EOF", err.Error(), "the SVG is well-formed XML")
					break
				}
			}
			assert.Equal(t, 2, strings.Count(string(plot), "<circle"), "a point per level")
		})
	}
}
