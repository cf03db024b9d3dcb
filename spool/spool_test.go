package spool_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/spool"
)

type record struct {
	Seq  uint64
	Data string
}

func pending(t require.TestingT, s *spool.Spool) []record {
	var out []record
	require.NoError(t, s.Pending(func(seq uint64, data []byte) error {
		out = append(out, record{seq, string(data)})
		return nil
	}))
	return out
}

func segments(t testing.TB, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	require.NoError(t, err)
	return names
}

func TestAppendSyncRecover(t *testing.T) {
	dir := t.TempDir()
	s, err := spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	for i := range 5 {
		seq, err := s.Append([]byte(fmt.Sprint("r", i)))
		require.NoError(t, err)
		assert.Equal(t, uint64(i+1), seq)
	}
	assert.Equal(t, uint64(1), s.Durable(), "nothing is durable before Sync")
	require.NoError(t, s.Sync())
	assert.Equal(t, uint64(6), s.Durable())
	assert.True(t, s.Complete(2))
	assert.False(t, s.Complete(2), "second Complete")
	assert.False(t, s.Complete(99), "unknown record")
	assert.True(t, s.Complete(4))
	require.NoError(t, s.Sync())
	_, err = s.Append([]byte("lost"))
	require.NoError(t, err)
	s.Crash()

	s, err = spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, []record{{1, "r0"}, {3, "r2"}, {5, "r4"}}, pending(t, s))
	assert.Equal(t, 3, s.Stats().Recovered)
	seq, err := s.Append([]byte("new"))
	require.NoError(t, err)
	assert.Equal(t, uint64(6), seq, "sequence numbers continue after the last durable record")
}

func TestCloseRemovesCompletedSegments(t *testing.T) {
	dir := t.TempDir()
	s, err := spool.Open(dir, spool.Config{SegmentSize: 64})
	require.NoError(t, err)
	var seqs []uint64
	for i := range 20 {
		seq, err := s.Append([]byte(fmt.Sprint("record ", i)))
		require.NoError(t, err)
		seqs = append(seqs, seq)
		require.NoError(t, s.Sync())
	}
	assert.Greater(t, len(segments(t, dir)), 5)
	for _, seq := range seqs[:10] {
		s.Complete(seq)
	}
	require.NoError(t, s.Sync())
	assert.Equal(t, 10, s.Stats().Pending)
	assert.LessOrEqual(t, s.Stats().Segments, 12, "completed prefix compacted")
	for _, seq := range seqs[10:] {
		s.Complete(seq)
	}
	require.NoError(t, s.Close())
	assert.Empty(t, segments(t, dir), "a spool closed with nothing pending leaves no segment")
	assert.ErrorIs(t, s.Close(), spool.ErrClosed)
	_, err = s.Append(nil)
	assert.ErrorIs(t, err, spool.ErrClosed)
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	_, err = spool.Open(dir, spool.Config{})
	assert.ErrorIs(t, err, spool.ErrLocked)
	require.NoError(t, s.Close())
	s, err = spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	s, err := spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	for _, r := range []string{"a", "b", "c"} {
		_, err := s.Append([]byte(r))
		require.NoError(t, err)
	}
	require.NoError(t, s.Sync())
	s.Crash()
	segs := segments(t, dir)
	require.Len(t, segs, 1)
	info, err := os.Stat(segs[0])
	require.NoError(t, err)
	require.NoError(t, os.Truncate(segs[0], info.Size()-3))

	s, err = spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	assert.Equal(t, []record{{1, "a"}, {2, "b"}}, pending(t, s))
	assert.Positive(t, s.Stats().Truncated)
	require.NoError(t, s.Close())
}

func TestCorruptOlderSegment(t *testing.T) {
	dir := t.TempDir()
	s, err := spool.Open(dir, spool.Config{SegmentSize: 1})
	require.NoError(t, err)
	for _, r := range []string{"a", "b"} {
		_, err := s.Append([]byte(r))
		require.NoError(t, err)
		require.NoError(t, s.Sync())
	}
	s.Crash()
	segs := segments(t, dir)
	require.GreaterOrEqual(t, len(segs), 2)
	b, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff
	require.NoError(t, os.WriteFile(segs[0], b, 0o644))
	_, err = spool.Open(dir, spool.Config{})
	var ce *spool.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, segs[0], ce.Path)
}

func TestTooLarge(t *testing.T) {
	s, err := spool.Open(t.TempDir(), spool.Config{})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Append(make([]byte, spool.MaxRecordSize+1))
	assert.ErrorIs(t, err, spool.ErrTooLarge)
	_, err = spool.Open(t.TempDir(), spool.Config{SegmentSize: -1})
	assert.Error(t, err)
}

// TestModel checks a spool against a map through appends, syncs,
// completions, crashes and clean reopens: after a crash, Pending returns
// every durable record that was not completed, and none whose completion
// was synced.
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp("", "spool-model")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		cfg := spool.Config{SegmentSize: rapid.Int64Range(1, 512).Draw(t, "segment")}
		s, err := spool.Open(dir, cfg)
		require.NoError(t, err)
		durable := map[uint64]string{}  // durable and not completed
		unsynced := map[uint64]string{} // appended, not yet synced
		completedSynced := map[uint64]bool{}
		var completedUnsynced []uint64
		reopen := func(crash bool) {
			if crash {
				s.Crash()
			} else {
				require.NoError(t, s.Close())
				for _, seq := range completedUnsynced {
					completedSynced[seq] = true
				}
			}
			clear(unsynced)
			completedUnsynced = nil
			s, err = spool.Open(dir, cfg)
			require.NoError(t, err)
			got := pending(t, s)
			seen := map[uint64]bool{}
			for _, r := range got {
				seen[r.Seq] = true
				assert.False(t, completedSynced[r.Seq], "record %d completed and synced, yet pending", r.Seq)
				if d, ok := durable[r.Seq]; ok {
					assert.Equal(t, d, r.Data)
				}
			}
			for seq := range durable {
				assert.True(t, seen[seq], "durable record %d lost", seq)
			}
			// What Pending returns beyond the model was completed but its mark
			// was lost: it becomes pending again.
			for _, r := range got {
				durable[r.Seq] = r.Data
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"append": func(t *rapid.T) {
				data := rapid.StringN(0, 40, -1).Draw(t, "data")
				seq, err := s.Append([]byte(data))
				require.NoError(t, err)
				// A sequence number is reused only when no mark refers to it:
				// when the records that had it were lost or all deleted.
				delete(completedSynced, seq)
				unsynced[seq] = data
			},
			"sync": func(t *rapid.T) {
				require.NoError(t, s.Sync())
				for seq, d := range unsynced {
					durable[seq] = d
				}
				clear(unsynced)
				for _, seq := range completedUnsynced {
					completedSynced[seq] = true
				}
				completedUnsynced = nil
			},
			"complete": func(t *rapid.T) {
				if len(durable) == 0 {
					t.Skip("nothing durable")
				}
				seq := rapid.SampledFrom(slices.Sorted(maps.Keys(durable))).Draw(t, "seq")
				assert.True(t, s.Complete(seq))
				delete(durable, seq)
				completedUnsynced = append(completedUnsynced, seq)
			},
			"crash":  func(t *rapid.T) { reopen(true) },
			"reopen": func(t *rapid.T) { reopen(false) },
		})
		require.NoError(t, s.Close())
	})
}

func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	s, err := spool.Open(dir, spool.Config{})
	require.NoError(f, err)
	for _, r := range []string{"a", "bb", ""} {
		_, err := s.Append([]byte(r))
		require.NoError(f, err)
	}
	s.Complete(2)
	require.NoError(f, s.Sync())
	s.Complete(1)
	require.NoError(f, s.Sync())
	s.Crash()
	seed, err := os.ReadFile(segments(f, dir)[0])
	require.NoError(f, err)
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, seg []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "00000000000000000001.wal"), seg, 0o644))
		s, err := spool.Open(dir, spool.Config{})
		if err != nil {
			var ce *spool.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %v", err)
			}
			return
		}
		defer s.Close()
		_ = s.Pending(func(uint64, []byte) error { return nil })
		_, err = s.Append([]byte("x"))
		require.NoError(t, err)
		require.NoError(t, s.Sync())
	})
}

func BenchmarkAppendSync(b *testing.B) {
	for _, batch := range []int{1, 20, 256} {
		b.Run(fmt.Sprint("batch=", batch), func(b *testing.B) {
			s, err := spool.Open(b.TempDir(), spool.Config{})
			require.NoError(b, err)
			defer s.Close()
			rec := []byte("sensors/kitchen/t1 temperature,room=kitchen,sensor=t1 value=21.5 1700000000000000000")
			b.SetBytes(int64(len(rec)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				seq, err := s.Append(rec)
				if err != nil {
					b.Fatal(err)
				}
				n++
				if n%batch == 0 {
					if err := s.Sync(); err != nil {
						b.Fatal(err)
					}
					for q := seq + 1 - uint64(batch); q <= seq; q++ {
						s.Complete(q)
					}
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
