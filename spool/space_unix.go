//go:build unix

package spool

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// diskSpace returns the bytes free to an unprivileged user and the size of
// the file system that holds dir.
func diskSpace(dir string) (free, total int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("spool: free space of %s: %w", dir, err)
	}
	bs := int64(st.Bsize)
	return int64(st.Bavail) * bs, int64(st.Blocks) * bs, nil
}
