package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/checkpoint"
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

func TestDirRoundTrip(t *testing.T) {
	d, _ := open(t)
	ctx := context.Background()
	_, err := checkpoint.Latest(ctx, d)
	require.ErrorIs(t, err, checkpoint.ErrNotFound)
	write(t, d, 1, true)
	write(t, d, 2, true)
	m, err := checkpoint.Latest(ctx, d)
	require.NoError(t, err)
	require.Equal(t, checkpoint.Manifest{ID: 2, Instances: instances, Data: []byte{2}}, m)
	id, refused := restore(t, d)
	require.Equal(t, uint64(2), id)
	require.Empty(t, refused)
}

// newest returns the path of a file of checkpoint 2 in root.
func newest(root, name string) string {
	return filepath.Join(root, "00000000000000000002", name)
}

const bigSnap = "snap-window%2F0.snap"

func TestDirRefusesDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, root string)
		file   string // the file refused, "" if checkpoint 2 is not complete
		offset int64
		err    error
	}{
		{
			name:   "a byte flipped in a snapshot",
			damage: func(t *testing.T, root string) { flip(t, newest(root, bigSnap), 1<<20+100) },
			file:   bigSnap, offset: 6 + 8 + 1<<20, err: checkpoint.ErrChecksum,
		},
		{
			name:   "a snapshot's header flipped",
			damage: func(t *testing.T, root string) { flip(t, newest(root, bigSnap), 1) },
			file:   bigSnap, offset: 0, err: checkpoint.ErrFormat,
		},
		{
			name:   "a snapshot truncated inside a chunk",
			damage: func(t *testing.T, root string) { require.NoError(t, os.Truncate(newest(root, bigSnap), 1000)) },
			file:   bigSnap, offset: 6, err: io.ErrUnexpectedEOF,
		},
		{
			name: "a snapshot truncated at a chunk's end",
			damage: func(t *testing.T, root string) {
				require.NoError(t, os.Truncate(newest(root, bigSnap), 6+8+1<<20))
			},
			file: bigSnap, offset: 6 + 8 + 1<<20, err: io.ErrUnexpectedEOF,
		},
		{
			name: "a snapshot missing",
			damage: func(t *testing.T, root string) {
				require.NoError(t, os.Remove(newest(root, "snap-%53ource%20%41.snap")))
			},
			file: "snap-%53ource%20%41.snap", err: fs.ErrNotExist,
		},
		{
			name: "a snapshot with bytes past its end",
			damage: func(t *testing.T, root string) {
				f, err := os.OpenFile(newest(root, "snap-window%2F1.snap"), os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.Write([]byte{0})
				require.NoError(t, err)
				require.NoError(t, f.Close())
			},
			file: "snap-window%2F1.snap", offset: 6 + 8 + 104 + 8, err: checkpoint.ErrFormat,
		},
		{
			name:   "a byte flipped in the manifest",
			damage: func(t *testing.T, root string) { flip(t, newest(root, "MANIFEST"), 20) },
			file:   "MANIFEST", offset: 6, err: checkpoint.ErrChecksum,
		},
		{
			name: "a manifest half-written in place (a system without atomic rename)",
			damage: func(t *testing.T, root string) {
				fi, err := os.Stat(newest(root, "MANIFEST"))
				require.NoError(t, err)
				require.NoError(t, os.Truncate(newest(root, "MANIFEST"), fi.Size()/2))
			},
			file: "MANIFEST", offset: 6, err: io.ErrUnexpectedEOF,
		},
		{
			name: "a manifest half-written, not renamed (a crash while committing)",
			damage: func(t *testing.T, root string) {
				b, err := os.ReadFile(newest(root, "MANIFEST"))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(newest(root, "MANIFEST.tmp"), b[:len(b)/2], 0o644))
				require.NoError(t, os.Remove(newest(root, "MANIFEST")))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, root := open(t)
			write(t, d, 1, true)
			write(t, d, 2, true)
			tc.damage(t, root)

			id, refused := restore(t, d)
			require.Equal(t, uint64(1), id, "restored checkpoint")
			if tc.file == "" {
				require.Empty(t, refused)
				_, err := d.Manifest(context.Background(), 2)
				require.ErrorIs(t, err, checkpoint.ErrNotFound)
				return
			}
			require.Len(t, refused, 1)
			var ce *checkpoint.CorruptError
			require.ErrorAs(t, refused[0], &ce)
			require.ErrorIs(t, ce, tc.err)
			require.Equal(t, newest(root, tc.file), ce.File)
			require.Equal(t, tc.offset, ce.Offset)
			require.Contains(t, ce.Error(), tc.file)
		})
	}
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
	require.Len(t, entries, 2)
}

func TestDirNamesAndContext(t *testing.T) {
	d, _ := open(t)
	ctx := context.Background()
	require.ErrorIs(t, d.Put(ctx, 1, "", nil), checkpoint.ErrInvalidName)
	// Names differing in case stay apart on case-insensitive systems.
	require.NoError(t, d.Put(ctx, 1, "a", []byte("lower")))
	require.NoError(t, d.Put(ctx, 1, "A", []byte("upper")))
	b, err := d.Get(ctx, 1, "a")
	require.NoError(t, err)
	require.Equal(t, "lower", string(b))
	require.NoError(t, d.Put(ctx, 1, "empty", nil))
	b, err = d.Get(ctx, 1, "empty")
	require.NoError(t, err)
	require.Empty(t, b)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, d.Put(canceled, 1, "a", nil), context.Canceled)
	_, err = d.Get(canceled, 1, "a")
	require.True(t, errors.Is(err, context.Canceled))
}
