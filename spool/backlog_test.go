package spool_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/spool"
)

// item is what the tests' backlogs hand out: the record's sequence number
// and payload, and whether it was read back from disk.
type item struct {
	seq     uint64
	payload string
	disk    bool
}

func openBacklog(t tb, dir string, cfg spool.BacklogConfig) (*spool.Spool, *spool.Backlog[item]) {
	t.Helper()
	sp, err := spool.Open(dir, spool.Config{SegmentSize: 512, Preallocate: -1})
	require.NoError(t, err)
	b, err := spool.NewBacklog(sp, cfg, func(seq uint64, r spool.Record) (item, error) {
		return item{seq: seq, payload: string(r.Payload), disk: true}, nil
	})
	require.NoError(t, err)
	return sp, b
}

// TestBacklogMatchesModel checks a Backlog against a model, a list of the
// records not completed: whatever the memory bounds, the reader's pace
// and restarts, every record added is handed out once per run, in
// sequence order, and a restart hands out again exactly the records not
// completed, first.
func TestBacklogMatchesModel(t *testing.T) {
	root := t.TempDir()
	runs := 0
	rapid.Check(t, func(t *rapid.T) {
		runs++
		dir := fmt.Sprintf("%s/%d", root, runs)
		cfg := spool.BacklogConfig{
			MemoryRecords: rapid.IntRange(1, 8).Draw(t, "memory records"),
			MemoryBytes:   rapid.Int64Range(1, 64).Draw(t, "memory bytes"),
			ReadBatch:     rapid.IntRange(1, 5).Draw(t, "read batch"),
		}
		sp, b := openBacklog(t, dir, cfg)
		defer func() { b.Close(); sp.Close() }()
		var (
			waiting  []item // added, not handed out, in order
			open     []item // handed out, not completed
			rec      []byte
			n        int
			readBack uint64
		)
		ctx := context.Background()
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0: // the writer spools a batch and adds it
				var batch []uint64
				var payloads []string
				for range rapid.IntRange(1, 6).Draw(t, "batch") {
					n++
					p := fmt.Sprintf("r%d", n)
					rec = spool.AppendRecord(rec[:0], spool.Record{Source: "t", Received: int64(n), Payload: []byte(p)})
					seq, err := sp.Append(rec)
					require.NoError(t, err)
					batch, payloads = append(batch, seq), append(payloads, p)
				}
				require.NoError(t, sp.Sync())
				for i, seq := range batch {
					b.Add(seq, item{seq: seq, payload: payloads[i]}, int64(len(payloads[i])+1), int64(n))
					waiting = append(waiting, item{seq: seq, payload: payloads[i]})
				}
			case 1: // the reader takes what waits
				if len(waiting) == 0 {
					continue
				}
				limit := rapid.IntRange(1, 10).Draw(t, "limit")
				got, err := b.Next(ctx, nil, limit)
				require.NoError(t, err)
				require.NotEmpty(t, got)
				for i, g := range got {
					require.Equal(t, waiting[i].seq, g.seq, "in sequence order")
					require.Equal(t, waiting[i].payload, g.payload)
					if g.disk {
						readBack++
					}
				}
				open = append(open, waiting[:len(got)]...)
				waiting = waiting[len(got):]
			case 2: // the pipeline completes some of what it took
				if len(open) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(open)-1).Draw(t, "complete")
				sp.Complete(open[i].seq)
				open = append(open[:i], open[i+1:]...)
			case 3: // the process stops and starts again
				require.NoError(t, sp.Sync())
				b.Close()
				require.NoError(t, sp.Close())
				sp, b = openBacklog(t, dir, cfg)
				readBack = 0
				left := append(open, waiting...)
				slices.SortFunc(left, func(a, b item) int { return cmp.Compare(a.seq, b.seq) })
				waiting, open = left, nil
			}
			st := b.Stats()
			require.Equal(t, int64(len(waiting)), st.Records, "records waiting")
			require.Equal(t, readBack, st.ReadBack)
		}
		// The reader drains what is left.
		for len(waiting) > 0 {
			got, err := b.Next(ctx, nil, len(waiting))
			require.NoError(t, err)
			for i, g := range got {
				require.Equal(t, waiting[i].seq, g.seq)
			}
			waiting = waiting[len(got):]
		}
		st := b.Stats()
		require.Zero(t, st.Records)
		require.Zero(t, st.Bytes)
		require.Zero(t, st.OnDisk)
	})
}

// TestBacklogNextWaits checks that Next returns ctx's error when nothing
// waits.
func TestBacklogNextWaits(t *testing.T) {
	sp, b := openBacklog(t, t.TempDir(), spool.BacklogConfig{})
	defer func() { b.Close(); sp.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Next(ctx, nil, 1)
	require.ErrorIs(t, err, context.Canceled)
}
