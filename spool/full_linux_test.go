package spool_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sensorstorm/sensorstorm/spool"
)

// tmpfs mounts a file system of size bytes for the test, or skips the
// test when not root. As root a failed mount fails the test: CI runs it
// as root, and it must not pass without having filled a disk.
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("filling a small file system needs root, to mount a tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	require.NoError(t, os.Mkdir(dir, 0o755))
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("running as root, but cannot mount a %s tmpfs at %s to fill it: %v", size, dir, err)
	}
	// Detached lazily: files a failed test left open keep it busy.
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestFullDisk fills a real, small file system until a Sync fails with
// ENOSPC, stops as ingest does (Close) or is killed, and opens the spool
// again on the still full disk: no damage, nothing lost, every record a
// Sync acknowledged pending, and at most the failed Sync's records more.
func TestFullDisk(t *testing.T) {
	tests := []struct {
		name string
		cfg  spool.Config
		stop string
	}{
		{"preallocated, closed", spool.Config{}, "close"},
		{"preallocated, killed", spool.Config{}, "crash"},
		{"appended, closed", spool.Config{Preallocate: -1}, "close"},
		{"small segments, killed", spool.Config{SegmentSize: 64 << 10, Preallocate: 16 << 10}, "crash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(tmpfs(t, "2m"), "spool")
			s, err := spool.Open(dir, tt.cfg)
			require.NoError(t, err)
			acked, err := fillUntilFull(t, s)
			require.ErrorIs(t, err, spool.ErrFailed)
			require.ErrorIs(t, err, unix.ENOSPC)
			require.NotEmpty(t, acked)
			if tt.stop == "close" {
				assert.ErrorIs(t, s.Close(), unix.ENOSPC)
			} else {
				s.Crash()
			}

			for _, repair := range []bool{false, true} {
				cfg := tt.cfg
				cfg.Repair = repair
				s, err = spool.Open(dir, cfg)
				require.NoError(t, err, "a full disk is not damage")
				got := pending(t, s)
				require.GreaterOrEqual(t, len(got), len(acked))
				assert.Equal(t, acked, got[:len(acked)], "every acknowledged record, in order")
				assert.LessOrEqual(t, len(got)-len(acked), 20, "at most the failed Sync's records besides")
				assert.True(t, slices.IsSortedFunc(got, func(a, b record) int { return int(a.Seq) - int(b.Seq) }))
				assert.Zero(t, s.Stats().Lost)
				assert.Empty(t, s.Damage())
				s.Crash()
			}
		})
	}
}
