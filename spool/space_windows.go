//go:build windows

package spool

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// diskSpace returns the bytes free to the caller and the size of the
// volume that holds dir.
func diskSpace(dir string) (free, total int64, err error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("spool: free space of %s: %w", dir, err)
	}
	var avail, size, all uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &size, &all); err != nil {
		return 0, 0, fmt.Errorf("spool: free space of %s: %w", dir, err)
	}
	return int64(avail), int64(size), nil
}
