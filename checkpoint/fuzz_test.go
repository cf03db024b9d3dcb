package checkpoint_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/checkpoint"
)

// FuzzDirGet reads arbitrary bytes as a snapshot file and as a manifest:
// data or a *CorruptError, never a panic.
func FuzzDirGet(f *testing.F) {
	d, root := open(f)
	ctx := context.Background()
	require.NoError(f, d.Put(ctx, 1, "a", []byte("state of a")))
	require.NoError(f, d.Commit(ctx, checkpoint.Manifest{ID: 1, Instances: []string{"a"}, Data: []byte("x")}))
	folder := filepath.Join(root, "00000000000000000001")
	for _, name := range []string{"snap-a.snap", "MANIFEST"} {
		b, err := os.ReadFile(filepath.Join(folder, name))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, name := range []string{"snap-a.snap", "MANIFEST"} {
			require.NoError(t, os.WriteFile(filepath.Join(folder, name), in, 0o644))
		}
		var ce *checkpoint.CorruptError
		if _, err := d.Get(ctx, 1, "a"); err != nil && !errors.As(err, &ce) {
			t.Fatalf("Get: %v is no CorruptError", err)
		}
		if _, err := d.Manifest(ctx, 1); err != nil && !errors.As(err, &ce) {
			t.Fatalf("Manifest: %v is no CorruptError", err)
		}
	})
}
