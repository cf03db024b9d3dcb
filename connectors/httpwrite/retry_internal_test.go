package httpwrite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/streamclock"
)

// TestRetryAfter checks the wait a 503 at the disk quota asks: the time
// the pipeline takes, at its drain rate, to take as many bytes as the
// body brings, within Config.RetryAfter and maxRetryAfter, and
// Config.RetryAfter while the pipeline takes nothing.
func TestRetryAfter(t *testing.T) {
	wall := streamclock.NewFake(time.Unix(1_700_000_000, 0))
	sp, err := spool.Open(t.TempDir(), spool.Config{})
	require.NoError(t, err)
	defer sp.Close()
	bl, err := spool.NewBacklog(sp, spool.BacklogConfig{MaxBytes: 1 << 20, MinFree: 1, Now: wall.Now},
		func(uint64, spool.Record) (*write, error) { return &write{}, nil })
	require.NoError(t, err)
	defer bl.Close()
	s := &Source{cfg: Config{RetryAfter: time.Second}, backlog: bl}

	// Ten bodies of 100 bytes, none taken yet.
	for range 10 {
		seq, err := sp.Append(spool.AppendRecord(nil, spool.Record{Source: "s", Payload: make([]byte, 99)}))
		require.NoError(t, err)
		require.NoError(t, sp.Sync())
		bl.Add(seq, &write{}, 100, wall.Now().UnixNano())
	}
	assert.Equal(t, time.Second, s.retryAfter(1000), "nothing drains: the configured wait")

	// Five taken in a second: five bodies a second.
	wall.Advance(time.Second)
	got, err := bl.Next(t.Context(), nil, 5)
	require.NoError(t, err)
	require.Len(t, got, 5)
	assert.Equal(t, 2*time.Second, s.retryAfter(1000), "room for ten bodies' bytes in two seconds")
	assert.Equal(t, time.Second, s.retryAfter(-1), "one body: a fifth of a second, at least the configured wait")
	assert.Equal(t, maxRetryAfter, s.retryAfter(1<<20), "at most maxRetryAfter")
}
