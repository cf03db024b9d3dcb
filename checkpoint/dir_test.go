package checkpoint_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/checkpoint/checkpointtest"
)

var instances = []string{"window/0", "window/1", "Source A"}

// snapshot returns the snapshot of instance for checkpoint id, larger than
// a chunk for the first instance.
func snapshot(id uint64, instance string) []byte {
	n := 100
	if instance == instances[0] {
		n = 3 << 20 / 2
	}
	b := bytes.Repeat([]byte(instance), n/len(instance)+1)
	b[0] = byte(id)
	return b
}

// write stores checkpoint id: every instance's snapshot, then, if commit,
// the manifest.
func write(t *testing.T, s checkpoint.Store, id uint64, commit bool) {
	t.Helper()
	ctx := context.Background()
	for _, in := range instances {
		require.NoError(t, s.Put(ctx, id, in, snapshot(id, in)))
	}
	if commit {
		require.NoError(t, s.Commit(ctx, checkpoint.Manifest{ID: id, Instances: instances, Data: []byte{byte(id)}}))
	}
}

// restore reads the newest checkpoint it can, falling back past damaged
// ones as a caller whose sources can still replay does, and checks it.
func restore(t *testing.T, s checkpoint.Store) (uint64, []error) {
	t.Helper()
	ctx := context.Background()
	ids, err := s.Checkpoints(ctx)
	require.NoError(t, err)
	var refused []error
next:
	for _, id := range ids {
		m, err := s.Manifest(ctx, id)
		if err != nil {
			refused = append(refused, err)
			continue
		}
		require.Equal(t, id, m.ID)
		require.Equal(t, []byte{byte(id)}, m.Data)
		for _, in := range m.Instances {
			b, err := s.Get(ctx, id, in)
			if err != nil {
				refused = append(refused, err)
				continue next
			}
			require.Equal(t, snapshot(id, in), b)
		}
		return id, refused
	}
	return 0, refused
}

func open(t testing.TB) (*checkpoint.Dir, string) {
	root := t.TempDir()
	d, err := checkpoint.OpenDir(root)
	require.NoError(t, err)
	return d, root
}

// newest returns the path of a file of checkpoint 2 in root.
func newest(root, name string) string {
	return filepath.Join(root, "00000000000000000002", name)
}

const bigSnap = "snap-window%2F0.snap"

// chunkFiles returns the chunk files in root.
func chunkFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "chunks", "*.chunk"))
	require.NoError(t, err)
	set := map[string]bool{}
	for _, f := range files {
		set[f] = true
	}
	return set
}

func TestDirRefusesDamage(t *testing.T) {
	type where struct {
		root  string
		chunk string // a chunk of checkpoint 2 that checkpoint 1 does not hold
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, w where)
		file   func(w where) string // the file refused, nil if checkpoint 2 is not complete
		offset int64
		err    error
	}{
		{
			name:   "a byte flipped in a chunk",
			damage: func(t *testing.T, w where) { flip(t, w.chunk, 100) },
			file:   func(w where) string { return w.chunk }, offset: 6, err: checkpoint.ErrChecksum,
		},
		{
			name:   "a chunk's header flipped",
			damage: func(t *testing.T, w where) { flip(t, w.chunk, 1) },
			file:   func(w where) string { return w.chunk }, offset: 0, err: checkpoint.ErrFormat,
		},
		{
			name: "a chunk truncated",
			damage: func(t *testing.T, w where) {
				fi, err := os.Stat(w.chunk)
				require.NoError(t, err)
				require.NoError(t, os.Truncate(w.chunk, fi.Size()/2))
			},
			file: func(w where) string { return w.chunk }, offset: 6, err: io.ErrUnexpectedEOF,
		},
		{
			name:   "a chunk missing",
			damage: func(t *testing.T, w where) { require.NoError(t, os.Remove(w.chunk)) },
			file:   func(w where) string { return w.chunk }, err: fs.ErrNotExist,
		},
		{
			name:   "a byte flipped in a snapshot's list of chunks",
			damage: func(t *testing.T, w where) { flip(t, newest(w.root, bigSnap), 20) },
			file:   func(w where) string { return newest(w.root, bigSnap) }, offset: 6, err: checkpoint.ErrChecksum,
		},
		{
			name: "a snapshot missing",
			damage: func(t *testing.T, w where) {
				require.NoError(t, os.Remove(newest(w.root, "snap-%53ource%20%41.snap")))
			},
			file: func(w where) string { return newest(w.root, "snap-%53ource%20%41.snap") }, err: fs.ErrNotExist,
		},
		{
			name:   "a byte flipped in the manifest",
			damage: func(t *testing.T, w where) { flip(t, newest(w.root, "MANIFEST"), 20) },
			file:   func(w where) string { return newest(w.root, "MANIFEST") }, offset: 6, err: checkpoint.ErrChecksum,
		},
		{
			name: "a manifest half-written in place (a system without atomic rename)",
			damage: func(t *testing.T, w where) {
				fi, err := os.Stat(newest(w.root, "MANIFEST"))
				require.NoError(t, err)
				require.NoError(t, os.Truncate(newest(w.root, "MANIFEST"), fi.Size()/2))
			},
			file: func(w where) string { return newest(w.root, "MANIFEST") }, offset: 6, err: io.ErrUnexpectedEOF,
		},
		{
			name: "a manifest half-written, not renamed (a crash while committing)",
			damage: func(t *testing.T, w where) {
				b, err := os.ReadFile(newest(w.root, "MANIFEST"))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(newest(w.root, "MANIFEST.tmp"), b[:len(b)/2], 0o644))
				require.NoError(t, os.Remove(newest(w.root, "MANIFEST")))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, root := open(t)
			write(t, d, 1, true)
			before := chunkFiles(t, root)
			write(t, d, 2, true)
			w := where{root: root}
			for f := range chunkFiles(t, root) {
				if !before[f] {
					w.chunk = f
				}
			}
			require.NotEmpty(t, w.chunk, "checkpoint 2 wrote a chunk of its own")
			tc.damage(t, w)

			id, refused := restore(t, d)
			require.Equal(t, uint64(1), id, "restored checkpoint")
			if tc.file == nil {
				require.Empty(t, refused)
				_, err := d.Manifest(context.Background(), 2)
				require.ErrorIs(t, err, checkpoint.ErrNotFound)
				return
			}
			require.Len(t, refused, 1)
			var ce *checkpoint.CorruptError
			require.ErrorAs(t, refused[0], &ce)
			require.ErrorIs(t, ce, tc.err)
			require.Equal(t, tc.file(w), ce.File)
			require.Equal(t, tc.offset, ce.Offset)
			require.Contains(t, ce.Error(), filepath.Base(tc.file(w)))
		})
	}
}

// A checkpoint whose state changed in a few places writes only the chunks
// around them; Prune removes the chunks no kept checkpoint holds.
func TestDirIsIncremental(t *testing.T) {
	d, root := open(t)
	checkpoint.SetPruneGrace(d, 0)
	ctx := context.Background()
	state := make([]byte, 64<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range state {
		state[i] = byte(rng.Uint32())
	}
	sizeOf := func(files map[string]bool) (n int64) {
		for f := range files {
			fi, err := os.Stat(f)
			require.NoError(t, err)
			n += fi.Size()
		}
		return n
	}
	put := func(id uint64) {
		require.NoError(t, d.Put(ctx, id, "big", state))
		require.NoError(t, d.Commit(ctx, checkpoint.Manifest{ID: id, Instances: []string{"big"}}))
	}
	put(1)
	first := chunkFiles(t, root)
	require.InDelta(t, float64(len(state)), float64(sizeOf(first)), float64(len(state))/50, "the first checkpoint writes it all")
	// A few changes, an insertion among them: the cuts move near them only.
	state[1<<20] ^= 1
	state[5<<20] ^= 1
	state = append(state[:3<<20], append([]byte("inserted"), state[3<<20:]...)...)
	put(2)
	written := map[string]bool{}
	for f := range chunkFiles(t, root) {
		if !first[f] {
			written[f] = true
		}
	}
	require.NotEmpty(t, written)
	require.Less(t, sizeOf(written), int64(len(state)/10), "the second checkpoint writes what changed")
	t.Logf("the second checkpoint of %d MiB wrote %d chunks, %d bytes", len(state)>>20, len(written), sizeOf(written))
	b, err := d.Get(ctx, 2, "big")
	require.NoError(t, err)
	require.Equal(t, state, b)

	require.NoError(t, d.Prune(ctx, 1))
	for f := range first {
		if _, err := os.Stat(f); err == nil {
			continue
		}
		require.False(t, written[f])
	}
	left := chunkFiles(t, root)
	require.Less(t, len(left), len(first)+len(written), "chunks only checkpoint 1 held are gone")
	b, err = d.Get(ctx, 2, "big")
	require.NoError(t, err)
	require.Equal(t, state, b)
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[off] ^= 0x40
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// TestDirCrashBetweenSnapshotsAndManifest stops a writer after the
// snapshots of checkpoint 3: the incomplete checkpoint is ignored, kept by
// Prune (it may be in progress), and written again by the restarted run.
func TestDirCrashBetweenSnapshotsAndManifest(t *testing.T) {
	d, root := open(t)
	ctx := context.Background()
	write(t, d, 1, true)
	write(t, d, 2, true)
	write(t, d, 3, false)

	d, err := checkpoint.OpenDir(root) // the restart
	require.NoError(t, err)
	ids, err := d.Checkpoints(ctx)
	require.NoError(t, err)
	require.Equal(t, []uint64{2, 1}, ids)
	id, _ := restore(t, d)
	require.Equal(t, uint64(2), id)
	require.NoError(t, d.Prune(ctx, 2))
	require.DirExists(t, filepath.Join(root, "00000000000000000003"))

	write(t, d, 3, true)
	m, err := checkpoint.Latest(ctx, d)
	require.NoError(t, err)
	require.Equal(t, uint64(3), m.ID)
}

func TestDirCommitRefusesMissingSnapshots(t *testing.T) {
	d, _ := open(t)
	ctx := context.Background()
	require.NoError(t, d.Put(ctx, 1, "a", []byte("x")))
	err := d.Commit(ctx, checkpoint.Manifest{ID: 1, Instances: []string{"a", "b"}})
	require.ErrorIs(t, err, fs.ErrNotExist)
	ids, err := d.Checkpoints(ctx)
	require.NoError(t, err)
	require.Empty(t, ids)
}

func TestDirPruneKeepsTheNewest(t *testing.T) {
	d, root := open(t)
	ctx := context.Background()
	write(t, d, 1, false) // a checkpoint that never completed
	for id := uint64(2); id <= 5; id++ {
		write(t, d, id, true)
	}
	require.NoError(t, d.Prune(ctx, 2))
	ids, err := d.Checkpoints(ctx)
	require.NoError(t, err)
	require.Equal(t, []uint64{5, 4}, ids)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"00000000000000000004", "00000000000000000005", "chunks"}, names)
	id, refused := restore(t, d)
	require.Equal(t, uint64(5), id, "the chunks the kept checkpoints hold are kept")
	require.Empty(t, refused)
}

func TestDirKeepsTheStoreContract(t *testing.T) {
	checkpointtest.TestStore(t, func(t *testing.T) checkpoint.Store {
		d, _ := open(t)
		return d
	})
}
