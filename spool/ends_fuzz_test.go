package spool_test

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/spool"
)

// Damage FuzzEnds does to one end of the log, chosen by a byte modulo the
// count.
const (
	intact = iota
	deleteSegment
	truncateSegment
	zeroSegment
	flipByte
	damages
)

// FuzzEnds runs appends, Syncs and completions that ops spells ('a', 's',
// 'c', or any byte by its value modulo 3), crashes
// (during the last Sync if killLast), damages the oldest segment as head
// says and the newest as tail says, at offsets headAt and tailAt, and
// checks that no durable record goes silently: either Pending hands out
// every durable record not completed, or Open refuses and Repair counts
// at least the records missing as lost.
func FuzzEnds(f *testing.F) {
	f.Add([]byte("aaaasaaascaas"), false, uint8(intact), uint8(truncateSegment), uint16(0), uint16(40))
	f.Add([]byte("aaaasaaaasaaaascaaaasccas"), false, uint8(deleteSegment), uint8(intact), uint16(0), uint16(0))
	f.Add([]byte("aaaasaaaasaaaascaaaasccas"), true, uint8(intact), uint8(deleteSegment), uint16(0), uint16(0))
	f.Add([]byte("aaasaaasaaas"), false, uint8(truncateSegment), uint8(zeroSegment), uint16(30), uint16(25))
	f.Add([]byte("aasasasasaaaaaaasccccs"), true, uint8(flipByte), uint8(flipByte), uint16(7), uint16(90))
	f.Fuzz(func(t *testing.T, ops []byte, killLast bool, head, tail uint8, headAt, tailAt uint16) {
		if len(ops) > 200 {
			t.Skip("long runs add nothing the short ones do not")
		}
		dir := t.TempDir()
		cfg := spool.Config{SegmentSize: 256, Preallocate: 64}
		s, err := spool.Open(dir, cfg)
		require.NoError(t, err)
		data := map[uint64]string{}
		var durable []uint64           // synced, in order
		completed := map[uint64]bool{} // Complete called: may be gone
		next := 0                      // the next durable record to complete
		sync := func(last bool) {
			if last && killLast {
				require.NoError(t, s.SyncKilled())
				return
			}
			require.NoError(t, s.Sync())
			for seq := range data {
				if seq < s.Durable() && !slices.Contains(durable, seq) {
					durable = append(durable, seq)
				}
			}
			slices.Sort(durable)
		}
		for i, op := range ops {
			switch {
			case op == 'a' || op != 's' && op != 'c' && op%3 == 0:
				seq, err := s.Append([]byte{'r', op})
				require.NoError(t, err)
				data[seq] = string([]byte{'r', op})
			case op == 's' || op != 'c' && op%3 == 1:
				sync(i == len(ops)-1)
			default:
				if next < len(durable) {
					s.Complete(durable[next])
					completed[durable[next]] = true
					next++
				}
			}
		}
		s.Crash()

		segs := segments(t, dir)
		if len(segs) > 0 {
			damageEnd(t, segs[0], head%damages, int(headAt))
			if last := segs[len(segs)-1]; last != segs[0] || head%damages == intact {
				damageEnd(t, last, tail%damages, int(tailAt))
			}
		}

		var missing []uint64
		s, err = spool.Open(dir, cfg)
		refused := err != nil
		if refused {
			var ce *spool.CorruptError
			require.True(t, errors.As(err, &ce), "Open: %v", err)
			repair := cfg
			repair.Repair = true
			s, err = spool.Open(dir, repair)
			require.NoError(t, err, "Repair goes on")
		}
		got := map[uint64]bool{}
		for _, r := range pending(t, s) {
			require.Equal(t, data[r.Seq], r.Data, "record %d", r.Seq)
			got[r.Seq] = true
		}
		for _, seq := range durable {
			if !completed[seq] && !got[seq] {
				missing = append(missing, seq)
			}
		}
		lost := s.Stats().Lost
		require.NoError(t, s.Close())
		if len(missing) > 0 {
			require.True(t, refused, "durable records %v lost silently", missing)
			require.GreaterOrEqual(t, lost, uint64(len(missing)), "durable records %v lost, fewer counted", missing)
		}
	})
}

// damageEnd damages the segment at path as kind says, at offset at
// (modulo its length).
func damageEnd(t *testing.T, path string, kind uint8, at int) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	if len(b) == 0 && kind != deleteSegment {
		return
	}
	switch kind {
	case deleteSegment:
		require.NoError(t, os.Remove(path))
		return
	case truncateSegment:
		b = b[:at%len(b)]
	case zeroSegment:
		clear(b[at%len(b):])
	case flipByte:
		b[at%len(b)] ^= 0x20
	default:
		return
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
}
