package spool

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync flushes f's data to the device, and its metadata only where
// needed to read the data back (a new size): fdatasync, which skips the
// journal commit that a mere change of modification time would cost.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
