package spool_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/spool"
)

// A run checkpointed at any count of particles, and restored from it any
// number of times, emits exactly what a run never stopped emits after that
// count; the records a checkpoint covers are those all of whose particles
// come before it, and a restored run reads the rest again.
func TestPositionsRestoreEmitsTheRest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		counts := rapid.SliceOfN(rapid.IntRange(0, 4), 1, 12).Draw(t, "particles per record")
		all := []spool.Position{} // every particle, as (record, index in it)
		for i, c := range counts {
			for k := range c {
				all = append(all, spool.Position{Seq: uint64(i + 1), K: uint64(k)})
			}
		}
		pending := make([]uint64, len(counts)) // the spool's records not completed
		for i := range pending {
			pending[i] = uint64(i + 1)
		}
		var resume spool.Position
		done := 0 // particles before the last checkpoint
		for range 4 {
			var p spool.Positions
			p.Resume(resume)
			got := []spool.Position{}
			for _, seq := range pending {
				p.Hand(seq)
				for k := range uint64(counts[seq-1]) {
					if !p.Next(seq, k) {
						got = append(got, spool.Position{Seq: seq, K: k})
					}
				}
			}
			require.Equal(t, all[done:], got, "a run restored at particle %d", done)

			at := rapid.IntRange(0, len(got)).Draw(t, "checkpoint at")
			pos := p.At(uint64(at))
			covered := p.Covered(pos)
			before := all[:done+at]
			for _, seq := range covered {
				for _, q := range all {
					require.False(t, q.Seq == seq && !slices.Contains(before, q),
						"record %d covered by a checkpoint at %v before its particle %d", seq, pos, q.K)
				}
			}
			pending = slices.DeleteFunc(pending, func(seq uint64) bool { return slices.Contains(covered, seq) })
			b, err := pos.MarshalBinary()
			require.NoError(t, err)
			require.NoError(t, resume.UnmarshalBinary(b))
			require.Equal(t, pos, resume)
			done += at
		}
	})
}

// A restored run completes the records its checkpoint covers, and a
// checkpoint of its own those before it, and only those: the next Open
// hands out the rest.
func TestCheckpointsCompleteWhatTheyCover(t *testing.T) {
	dir := t.TempDir()
	sp, err := spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	for i := range 5 {
		_, err := sp.Append([]byte{byte(i)})
		require.NoError(t, err)
	}
	require.NoError(t, sp.Sync())
	require.NoError(t, sp.Close())

	sp, err = spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	var p spool.Positions
	resumed, err := spool.Position{Seq: 4, K: 1}.MarshalBinary()
	require.NoError(t, err)
	require.NoError(t, p.ResumeAt(resumed))
	n, err := p.CompleteCovered(sp)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	// The restored run hands 4 and 5 on; a checkpoint at 5 covers 4.
	p.Hand(4)
	p.Hand(5)
	at, err := spool.Position{Seq: 5}.MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, 1, p.Commit(sp, at))
	require.NoError(t, sp.Close())

	sp, err = spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	defer sp.Close()
	var left []uint64
	require.NoError(t, sp.Pending(func(seq uint64, _ []byte) error { left = append(left, seq); return nil }))
	require.Equal(t, []uint64{5}, left)
}
