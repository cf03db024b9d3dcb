package spool_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/spool"
)

// TestFailedSyncSticks checks that after a Sync failed to write, no later
// Sync acknowledges anything (it would write records after the failed
// ones' hole), Close writes nothing, and the next Open finds the
// acknowledged records and no damage.
func TestFailedSyncSticks(t *testing.T) {
	for _, stop := range []string{"close", "crash"} {
		t.Run(stop, func(t *testing.T) {
			dir := t.TempDir()
			s, err := spool.Open(dir, spool.Config{})
			require.NoError(t, err)
			var acked []record
			for i := range 10 {
				seq, err := s.Append([]byte(payload(i)))
				require.NoError(t, err)
				acked = append(acked, record{seq, payload(i)})
			}
			require.NoError(t, s.Sync())
			_, err = s.Append([]byte("in the failed Sync"))
			require.NoError(t, err)
			require.NoError(t, s.BreakWrites())

			err = s.Sync()
			require.ErrorIs(t, err, spool.ErrFailed)
			_, err = s.Append([]byte("after"))
			assert.ErrorIs(t, err, spool.ErrFailed)
			assert.ErrorIs(t, s.Sync(), spool.ErrFailed, "a later Sync must not acknowledge")
			if stop == "close" {
				assert.ErrorIs(t, s.Close(), spool.ErrFailed)
			} else {
				s.Crash()
			}

			s, err = spool.Open(dir, spool.Config{})
			require.NoError(t, err)
			assert.Equal(t, acked, pending(t, s))
			assert.Zero(t, s.Stats().Lost)
			assert.Empty(t, s.Damage())
			require.NoError(t, s.Close())
		})
	}
}

// fillUntilFull appends batches of 20 records and Syncs them until a Sync
// fails, and returns the records whose Sync returned nil and the error.
func fillUntilFull(t *testing.T, s *spool.Spool) ([]record, error) {
	t.Helper()
	var acked, batch []record
	for i := 0; ; i++ {
		data := fmt.Sprintf("%s %0100d", payload(i), i)
		seq, err := s.Append([]byte(data))
		if err != nil {
			return acked, err
		}
		batch = append(batch, record{seq, data})
		if len(batch) == 20 {
			if err := s.Sync(); err != nil {
				return acked, err
			}
			acked, batch = append(acked, batch...), batch[:0]
		}
	}
}
