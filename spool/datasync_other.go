//go:build !linux

package spool

import "os"

// datasync flushes f to the device with File.Sync: fsync, or on macOS
// F_FULLFSYNC, which also empties the drive's cache; FlushFileBuffers on
// Windows.
func datasync(f *os.File) error { return f.Sync() }
