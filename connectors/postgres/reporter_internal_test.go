package postgres

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCounters(t *testing.T) {
	var s Sink
	s.stats.Written.Store(7)
	s.stats.Duplicates.Store(2)
	s.stats.Batches.Store(1)
	var names []string
	for name, v := range s.Counters() {
		names = append(names, name)
		require.Equal(t, map[string]int64{"written": 7, "merged": 0, "duplicates": 2, "rejected": 0, "batches": 1}[name], v, name)
	}
	require.Equal(t, []string{"written", "merged", "duplicates", "rejected", "batches"}, names)
	for range s.Connections() {
		t.Fatal("a pool, no connection to name")
	}
}
