package spool_test

import (
	"bytes"
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

// payload is the record numbered i+1 in the fixtures: unique, so that a
// test finds it in a segment.
func payload(i int) string { return fmt.Sprintf("record-%04d", i) }

// fill appends n records in Syncs of batch records, completing those done
// says (the Sync of the next batch writes the marks), and crashes during
// the last Sync, once it wrote: its records were not acknowledged. It
// returns the records left pending.
func fill(t *testing.T, dir string, cfg spool.Config, n, batch int, done func(i int) bool) []record {
	t.Helper()
	s, err := spool.Open(dir, cfg)
	require.NoError(t, err)
	var want []record
	for i := range n {
		seq, err := s.Append([]byte(payload(i)))
		require.NoError(t, err)
		switch {
		case i+1 == n:
			require.NoError(t, s.SyncKilled())
		case (i+1)%batch == 0:
			require.NoError(t, s.Sync())
			for j := i + 1 - batch; j <= i; j++ {
				if done(j) {
					assert.True(t, s.Complete(uint64(j+1)))
				}
			}
		}
		if !done(i) || i+batch >= n {
			want = append(want, record{seq, payload(i)})
		}
	}
	s.Crash()
	return want
}

// locate returns the segment holding the record i and the offset of its
// payload.
func locate(t *testing.T, dir string, i int) (string, int) {
	t.Helper()
	for _, path := range segments(t, dir) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		if off := bytes.Index(b, []byte(payload(i))); off >= 0 {
			return path, off
		}
	}
	t.Fatalf("record %d in no segment", i)
	return "", 0
}

func rewrite(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, edit(b), 0o644))
}

func without(recs []record, idx ...int) []record {
	return slices.DeleteFunc(slices.Clone(recs), func(r record) bool { return slices.Contains(idx, int(r.Seq)-1) })
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, p := range segments(t, dir) {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		m[p] = string(b)
	}
	return m
}

func odd(i int) bool { return i%2 == 1 }
func none(int) bool  { return false }

// TestTornLastWrite checks that damage to the last Sync's bytes, which a
// crash during that Sync leaves and which nothing acknowledged, is cut off
// without an error and without touching what earlier Syncs wrote.
func TestTornLastWrite(t *testing.T) {
	cfg := spool.Config{Preallocate: 4096}
	tests := []struct {
		name string
		// damage edits the newest segment; keep is how many records stay.
		damage func(t *testing.T, dir string)
		keep   int
	}{
		{"killed during the write: file ends inside the last record", func(t *testing.T, dir string) {
			path, off := locate(t, dir, 95)
			require.NoError(t, os.Truncate(path, int64(off+3)))
		}, 95},
		{"machine died: the last pages never reached the disk", func(t *testing.T, dir string) {
			path, off := locate(t, dir, 93)
			rewrite(t, path, func(b []byte) []byte { clear(b[off:]); return b })
		}, 93},
		{"machine died: pages of the last write reached the disk out of order", func(t *testing.T, dir string) {
			path, off := locate(t, dir, 91)
			rewrite(t, path, func(b []byte) []byte { clear(b[off : off+4]); return b })
		}, 91},
		{"a damaged byte in the last commit", func(t *testing.T, dir string) {
			path, off := locate(t, dir, 99)
			rewrite(t, path, func(b []byte) []byte { b[off+len(payload(99))+5] ^= 0x40; return b })
		}, 100},
		{"garbage after the preallocated zeros", func(t *testing.T, dir string) {
			segs := segments(t, dir)
			rewrite(t, segs[len(segs)-1], func(b []byte) []byte { b[len(b)-1] = 1; return b })
		}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			want := fill(t, dir, cfg, 100, 10, none)
			tt.damage(t, dir)
			s, err := spool.Open(dir, cfg)
			require.NoError(t, err)
			assert.Equal(t, want[:tt.keep], pending(t, s))
			st := s.Stats()
			assert.Positive(t, st.Truncated)
			assert.Zero(t, st.Lost)
			assert.Empty(t, s.Damage())
			require.NoError(t, s.Close())
		})
	}
}

// TestCorruption checks that damage to bytes a Sync made durable fails
// Open with the records lost counted and nothing changed, and that Repair
// goes on with every other record, for good.
func TestCorruption(t *testing.T) {
	big := spool.Config{Preallocate: 4096}
	small := spool.Config{Preallocate: 4096, SegmentSize: 500}
	flip := func(i int) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			path, off := locate(t, dir, i)
			rewrite(t, path, func(b []byte) []byte { b[off+2] ^= 0x10; return b })
		}
	}
	tests := []struct {
		name   string
		cfg    spool.Config
		done   func(int) bool
		damage func(t *testing.T, dir string)
		lost   []int // records gone, not completed
		back   []int // records completed, pending again
	}{
		{"one damaged byte well before the end of the newest segment", big, none, flip(42), []int{42}, nil},
		{"one damaged byte in an older segment", small, none, flip(5), []int{5}, nil},
		{"damaged completed record", big, odd, flip(43), nil, nil},
		{"damaged commit: its marks are lost, its records come again", big, odd, func(t *testing.T, dir string) {
			path, off := locate(t, dir, 29)
			rewrite(t, path, func(b []byte) []byte { b[off+len(payload(29))+5] ^= 0x40; return b })
		}, nil, []int{11, 13, 15, 17, 19}},
		{"older segment cut short", small, none, func(t *testing.T, dir string) {
			path, off := locate(t, dir, 3)
			require.NoError(t, os.Truncate(path, int64(off)))
		}, []int{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, nil},
		{"segment deleted", small, none, func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(segments(t, dir)[1]))
		}, []int{20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			want := fill(t, dir, tt.cfg, 100, 10, tt.done)
			if tt.cfg.SegmentSize > 0 {
				require.Greater(t, len(segments(t, dir)), 3)
			}
			tt.damage(t, dir)
			if tt.back != nil {
				for _, i := range tt.back {
					want = append(want, record{uint64(i + 1), payload(i)})
				}
				slices.SortFunc(want, func(a, b record) int { return int(a.Seq) - int(b.Seq) })
			}
			before := snapshot(t, dir)

			_, err := spool.Open(dir, tt.cfg)
			var ce *spool.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, uint64(len(tt.lost)), ce.Lost)
			assert.Equal(t, before, snapshot(t, dir), "Open without Repair changes nothing")

			cfg := tt.cfg
			cfg.Repair = true
			s, err := spool.Open(dir, cfg)
			require.NoError(t, err)
			want = without(want, tt.lost...)
			assert.Equal(t, want, pending(t, s))
			assert.Equal(t, uint64(len(tt.lost)), s.Stats().Lost)
			require.NotEmpty(t, s.Damage())
			assert.Equal(t, uint64(len(tt.lost)), s.Damage()[0].Lost)
			require.NoError(t, s.Close())

			// The repair is on disk: a plain Open finds no damage, and new
			// records take numbers no record had.
			s, err = spool.Open(dir, tt.cfg)
			require.NoError(t, err)
			assert.Equal(t, want, pending(t, s))
			seq, err := s.Append([]byte("after"))
			require.NoError(t, err)
			assert.Equal(t, uint64(101), seq)
			require.NoError(t, s.Sync())
			s.Crash()
			s, err = spool.Open(dir, tt.cfg)
			require.NoError(t, err)
			assert.Equal(t, append(want, record{101, "after"}), pending(t, s))
			require.NoError(t, s.Close())
		})
	}
}

// TestRepairWithTornTail checks a newest segment with both: damage well
// before its end and a torn last write.
func TestRepairWithTornTail(t *testing.T) {
	cfg := spool.Config{Preallocate: 4096, Repair: true}
	dir := t.TempDir()
	want := fill(t, dir, cfg, 100, 10, none)
	path, off := locate(t, dir, 95)
	require.NoError(t, os.Truncate(path, int64(off+3)))
	path, off = locate(t, dir, 42)
	rewrite(t, path, func(b []byte) []byte { b[off+2] ^= 0x10; return b })
	want = without(want[:95], 42)
	for range 2 { // repaired for good: the second Open finds nothing to repair
		s, err := spool.Open(dir, cfg)
		require.NoError(t, err)
		assert.Equal(t, want, pending(t, s))
		require.NoError(t, s.Close())
	}
}

// TestRecoveryModel checks recovery against a model: random records,
// completions and Syncs, a crash, then one damaged byte anywhere in any
// segment or a cut inside the last Sync's bytes. Recovery never returns a
// record that was not written, never drops one silently except from the
// last Sync (which a torn write cannot be told from), and counts the rest.
func TestRecoveryModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp("", "spool-recovery")
		require.NoError(t, err)
		defer os.RemoveAll(dir)
		prealloc := rapid.Int64Range(-1, 512).Draw(t, "preallocate")
		if prealloc == 0 {
			prealloc = -1
		}
		cfg := spool.Config{SegmentSize: rapid.Int64Range(64, 2048).Draw(t, "segment"), Preallocate: prealloc}
		s, err := spool.Open(dir, cfg)
		require.NoError(t, err)
		written := map[uint64]string{}
		durable := map[uint64]bool{} // synced, completion not synced
		var last map[uint64]bool     // what the last Sync wrote
		var lastPath string
		var lastStart int
		syncs := rapid.IntRange(1, 12).Draw(t, "syncs")
		for b := range syncs {
			for _, seq := range rapid.SliceOfDistinct(rapid.SampledFrom(append(slices.Sorted(maps.Keys(durable)), 0)), rapid.ID).Draw(t, "complete") {
				if seq != 0 {
					s.Complete(seq)
				}
			}
			last = map[uint64]bool{}
			for range rapid.IntRange(0, 8).Draw(t, "records") {
				data := fmt.Sprintf("%d:%s", b, rapid.StringMatching(`[a-z]{0,30}`).Draw(t, "data"))
				seq, err := s.Append([]byte(data))
				require.NoError(t, err)
				written[seq], last[seq] = data, true
			}
			segs := segments(t, dir)
			lastPath = segs[len(segs)-1]
			_, lastStart = frames(t, lastPath)
			if b == syncs-1 {
				require.NoError(t, s.SyncKilled()) // so the cut below may be a torn write
			} else {
				require.NoError(t, s.Sync())
			}
			maps.Copy(durable, last)
		}
		// Completions the last Sync did not write are lost with the crash;
		// those it wrote make their records not durable-and-pending.
		s.Crash()
		st, err := spool.Open(dir, spool.Config{Preallocate: -1})
		require.NoError(t, err)
		alive := pending(t, st)
		st.Crash()
		clear(durable)
		for _, r := range alive {
			durable[r.Seq] = true
		}

		segs := segments(t, dir)
		if _, err := os.Stat(lastPath); err == nil && rapid.Bool().Draw(t, "cut") {
			// (A segment left with completed records only is gone.)
			_, end := frames(t, lastPath)
			if end > lastStart {
				require.NoError(t, os.Truncate(lastPath, int64(rapid.IntRange(lastStart, end-1).Draw(t, "at"))))
			}
		} else {
			path := rapid.SampledFrom(segs).Draw(t, "path")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			if len(b) > 0 {
				b[rapid.IntRange(0, len(b)-1).Draw(t, "at")] ^= rapid.ByteRange(1, 255).Draw(t, "flip")
				require.NoError(t, os.WriteFile(path, b, 0o644))
			}
		}

		repaired := cfg
		repaired.Repair = true
		s, err = spool.Open(dir, repaired)
		require.NoError(t, err)
		got := pending(t, s)
		returned := map[uint64]bool{}
		for _, r := range got {
			require.Equal(t, written[r.Seq], r.Data, "record %d", r.Seq)
			returned[r.Seq] = true
		}
		var missing []uint64
		for seq := range durable {
			if !returned[seq] {
				missing = append(missing, seq)
			}
		}
		st2 := s.Stats()
		if len(s.Damage()) == 0 {
			for _, seq := range missing {
				require.True(t, last[seq], "record %d dropped silently, not from the last Sync", seq)
			}
			require.Zero(t, st2.Lost)
		} else {
			require.LessOrEqual(t, len(missing), int(st2.Lost), "records lost and not counted")
			require.LessOrEqual(t, int(st2.Lost), len(written)-len(got), "counted more than lost")
		}
		require.NoError(t, s.Close())

		s, err = spool.Open(dir, cfg)
		require.NoError(t, err, "repaired for good")
		require.True(t, slices.Equal(got, pending(t, s)), "the same records after the repair")
		seq, err := s.Append([]byte("new"))
		require.NoError(t, err)
		require.NoError(t, s.Sync())
		s.Crash()
		s, err = spool.Open(dir, cfg)
		require.NoError(t, err)
		after := pending(t, s)
		require.NotEmpty(t, after)
		require.Equal(t, record{seq, "new"}, after[len(after)-1])
		require.True(t, slices.Equal(got, after[:len(after)-1]), "the same records after an append")
		require.NoError(t, s.Close())
	})
}

// dataHeader is the length of a data frame before its record: the frame
// header, the kind byte and the sequence number.
const dataHeader = 12 + 1 + 8

// firstRecord returns the index of the first record a segment's name
// gives (its first sequence number less one).
func firstRecord(t *testing.T, path string) int {
	t.Helper()
	var seq int
	_, err := fmt.Sscanf(filepath.Base(path), "%d.wal", &seq)
	require.NoError(t, err)
	return seq - 1
}

// TestEnds checks that a log missing its first or last segment, or cut
// below what a Sync acknowledged, is damage like any other: Open fails
// counting the acknowledged records lost, and Repair goes on with the
// rest, for good. fill acknowledges records 0 to 89: the last Sync, of
// 90 to 99, was killed.
func TestEnds(t *testing.T) {
	one := spool.Config{Preallocate: 4096}
	small := spool.Config{Preallocate: 4096, SegmentSize: 500}
	tests := []struct {
		name string
		cfg  spool.Config
		// damage damages dir and returns the first acknowledged record
		// lost and how many.
		damage func(t *testing.T, dir string) (from, n int)
	}{
		{"the only segment deleted", one, func(t *testing.T, dir string) (int, int) {
			require.NoError(t, os.Remove(segments(t, dir)[0]))
			return 0, 90
		}},
		{"cut in half", one, func(t *testing.T, dir string) (int, int) {
			path, off := locate(t, dir, 45)
			require.NoError(t, os.Truncate(path, int64(off)))
			return 45, 45
		}},
		{"the end zeroed, as preallocated space", one, func(t *testing.T, dir string) (int, int) {
			path, off := locate(t, dir, 60)
			rewrite(t, path, func(b []byte) []byte { clear(b[off-dataHeader:]); return b })
			return 60, 30
		}},
		{"first segment deleted", small, func(t *testing.T, dir string) (int, int) {
			segs := segments(t, dir)
			require.NoError(t, os.Remove(segs[0]))
			return 0, firstRecord(t, segs[1])
		}},
		{"newest segments deleted", small, func(t *testing.T, dir string) (int, int) {
			path, _ := locate(t, dir, 85)
			from := firstRecord(t, path)
			for _, p := range segments(t, dir) {
				if p >= path {
					require.NoError(t, os.Remove(p))
				}
			}
			return from, 90 - from
		}},
		{"every segment deleted", small, func(t *testing.T, dir string) (int, int) {
			for _, p := range segments(t, dir) {
				require.NoError(t, os.Remove(p))
			}
			return 0, 90
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			want := fill(t, dir, tt.cfg, 100, 10, none)
			from, n := tt.damage(t, dir)
			require.Positive(t, n)
			before := snapshot(t, dir)

			_, err := spool.Open(dir, tt.cfg)
			var ce *spool.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, uint64(n), ce.Lost)
			assert.Equal(t, before, snapshot(t, dir), "Open without Repair changes nothing")

			cfg := tt.cfg
			cfg.Repair = true
			s, err := spool.Open(dir, cfg)
			require.NoError(t, err)
			got := pending(t, s)
			// The killed Sync's records may be there or not.
			acked := slices.DeleteFunc(slices.Clone(got), func(r record) bool { return r.Seq > 90 })
			assert.Equal(t, slices.Concat(want[:from], want[from+n:90]), acked, "every acknowledged record not lost")
			assert.Equal(t, uint64(n), s.Stats().Lost)
			require.NoError(t, s.Close())

			s, err = spool.Open(dir, tt.cfg)
			require.NoError(t, err, "repaired for good")
			assert.Equal(t, got, pending(t, s))
			seq, err := s.Append([]byte("after"))
			require.NoError(t, err)
			assert.GreaterOrEqual(t, seq, uint64(91), "no number an acknowledged record had")
			require.NoError(t, s.Close())
		})
	}
}

// TestEndsFile checks Open without an ENDS file (a spool written before
// there was one) and with an unreadable one.
func TestEndsFile(t *testing.T) {
	cfg := spool.Config{Preallocate: 4096}
	tests := []struct {
		name    string
		damage  func(path string) error
		corrupt bool
	}{
		{"missing: not checked", os.Remove, false},
		{"both slots damaged", func(path string) error { return os.WriteFile(path, make([]byte, 600), 0o644) }, true},
		{"one slot damaged", func(path string) error {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b[10] ^= 1 // the other slot, even of an older generation, is enough
			return os.WriteFile(path, b, 0o644)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			want := fill(t, dir, cfg, 100, 10, none)
			require.NoError(t, tt.damage(filepath.Join(dir, "ENDS")))
			s, err := spool.Open(dir, cfg)
			if tt.corrupt {
				var ce *spool.CorruptError
				require.ErrorAs(t, err, &ce)
				assert.Zero(t, ce.Lost)
				repair := cfg
				repair.Repair = true
				s, err = spool.Open(dir, repair)
			}
			require.NoError(t, err)
			assert.Equal(t, want, pending(t, s))
			require.NoError(t, s.Close())
			s, err = spool.Open(dir, cfg)
			require.NoError(t, err, "ENDS written again")
			require.NoError(t, s.Close())
		})
	}
}
