package spool_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

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

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

func segments(t tb, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	require.NoError(t, err)
	return names
}

// frames returns a segment's content and where its frames end, before the
// zeros preallocated after them (no test record ends with a zero byte).
func frames(t tb, path string) ([]byte, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b, len(bytes.TrimRight(b, "\x00"))
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

// TestPreallocate checks that the active segment is zero-filled ahead of
// its frames, that Open reads up to the zeros and appends after the
// frames, and that data after zeros is damage.
func TestPreallocate(t *testing.T) {
	dir := t.TempDir()
	cfg := spool.Config{Preallocate: 4096}
	s, err := spool.Open(dir, cfg)
	require.NoError(t, err)
	a, err := s.Append([]byte("a"))
	require.NoError(t, err)
	require.NoError(t, s.Sync())
	segs := segments(t, dir)
	require.Len(t, segs, 1)
	b, end := frames(t, segs[0])
	assert.Equal(t, end+4096, len(b), "zero-filled 4096 bytes past the frames")
	for i := range 200 {
		_, err := s.Append(fmt.Appendf(nil, "record %d", i))
		require.NoError(t, err)
		require.NoError(t, s.Sync())
	}
	b, end = frames(t, segs[0])
	assert.GreaterOrEqual(t, len(b)-end, 2048, "refilled when half was used")
	assert.LessOrEqual(t, len(b)-end, 4096)

	// The newest segment, holding marks only, is written on after them.
	require.NoError(t, s.Close())
	s, err = spool.Open(dir, cfg)
	require.NoError(t, err)
	require.Len(t, pending(t, s), 201)
	assert.True(t, s.Complete(a))
	require.NoError(t, s.Close())
	s, err = spool.Open(dir, cfg)
	require.NoError(t, err)
	got := pending(t, s)
	require.Len(t, got, 200)
	assert.Equal(t, record{2, "record 0"}, got[0])
	_, err = s.Append([]byte("b"))
	require.NoError(t, err)
	require.NoError(t, s.Sync())
	s.Crash()
	s, err = spool.Open(dir, cfg)
	require.NoError(t, err)
	got = pending(t, s)
	require.Len(t, got, 201)
	assert.Equal(t, record{202, "b"}, got[200], "appended after the frames of the reused segment")
	require.NoError(t, s.Close())

	// Zeros, then data: damage, cut off in the newest segment.
	dir = t.TempDir()
	s, err = spool.Open(dir, cfg)
	require.NoError(t, err)
	_, err = s.Append([]byte("a"))
	require.NoError(t, err)
	require.NoError(t, s.Sync())
	s.Crash()
	segs = segments(t, dir)
	b, end = frames(t, segs[0])
	b[len(b)-1] = 1
	require.NoError(t, os.WriteFile(segs[0], b, 0o644))
	s, err = spool.Open(dir, cfg)
	require.NoError(t, err)
	assert.Equal(t, int64(len(b)-end), s.Stats().Truncated)
	assert.Equal(t, []record{{1, "a"}}, pending(t, s))
	require.NoError(t, s.Close())

	// Off: the file holds the frames alone.
	dir = t.TempDir()
	s, err = spool.Open(dir, spool.Config{Preallocate: -1})
	require.NoError(t, err)
	_, err = s.Append([]byte("a"))
	require.NoError(t, err)
	require.NoError(t, s.Sync())
	b, end = frames(t, segments(t, dir)[0])
	assert.Equal(t, end, len(b))
	require.NoError(t, s.Close())
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
			"completeAll": func(t *rapid.T) {
				// Records durable or not, completed or not, some twice:
				// only the durable ones not completed count.
				known := append(slices.Collect(maps.Keys(durable)), slices.Collect(maps.Keys(unsynced))...)
				known = append(known, completedUnsynced...)
				slices.Sort(known)
				var seqs []uint64
				want := 0
				for range rapid.IntRange(0, 6).Draw(t, "n") {
					seq := rapid.SampledFrom(append(known, 0)).Draw(t, "seq")
					seqs = append(seqs, seq)
					if _, ok := durable[seq]; ok {
						want++
						delete(durable, seq)
						completedUnsynced = append(completedUnsynced, seq)
					}
				}
				assert.Equal(t, want, s.CompleteAll(seqs))
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
		s, err := spool.Open(dir, spool.Config{Preallocate: 64}) // small: fast
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

// BenchmarkSyncLatency measures Sync with and without preallocation, one
// after the other on two spools, so that both see the same load from the
// rest of the machine: batches of 20 records, as a broker holding 20
// messages unacknowledged sends them.
func BenchmarkSyncLatency(b *testing.B) {
	open := func(prealloc int64) *spool.Spool {
		s, err := spool.Open(b.TempDir(), spool.Config{Preallocate: prealloc})
		require.NoError(b, err)
		b.Cleanup(func() { s.Close() })
		return s
	}
	spools := []*spool.Spool{open(0), open(-1)}
	names := []string{"prealloc", "append"}
	lat := make([][]time.Duration, len(spools))
	rec := []byte("sensors/kitchen/t1 temperature,room=kitchen,sensor=t1 value=21.5 1700000000000000000")
	for b.Loop() {
		for i, s := range spools {
			var last uint64
			for range 20 {
				seq, err := s.Append(rec)
				require.NoError(b, err)
				last = seq
			}
			start := time.Now()
			require.NoError(b, s.Sync())
			lat[i] = append(lat[i], time.Since(start))
			for seq := last - 19; seq <= last; seq++ {
				s.Complete(seq)
			}
		}
	}
	for i, l := range lat {
		slices.Sort(l)
		var sum time.Duration
		for _, d := range l {
			sum += d
		}
		b.ReportMetric(float64(sum.Microseconds())/float64(len(l)), names[i]+"-mean-us")
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), names[i]+"-p50-us")
		b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), names[i]+"-p99-us")
	}
}

// TestConcurrentWriters has writers Append and Sync at once, with small
// segments so that Syncs rotate them while others append: every record
// whose Sync returned is found again after a crash, under its own
// sequence number.
func TestConcurrentWriters(t *testing.T) {
	const writers, each = 8, 50
	dir := t.TempDir()
	s, err := spool.Open(dir, spool.Config{SegmentSize: 512})
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make([][]record, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				data := fmt.Sprintf("writer-%d-%03d", w, i)
				seq, err := s.Append([]byte(data))
				if !assert.NoError(t, err) || !assert.NoError(t, s.Sync()) {
					return
				}
				assert.Less(t, seq, s.Durable())
				got[w] = append(got[w], record{seq, data})
			}
		})
	}
	wg.Wait()
	s.Crash()
	s, err = spool.Open(dir, spool.Config{SegmentSize: 512})
	require.NoError(t, err)
	defer s.Close()
	want := slices.Concat(got...)
	slices.SortFunc(want, func(a, b record) int { return cmp.Compare(a.Seq, b.Seq) })
	assert.Equal(t, want, pending(t, s))
}
