//go:build windows

package checkpoint

// dirSyncUnsupported reports whether err says that the system cannot
// fsync a directory: Windows refuses FlushFileBuffers on one, and makes a
// rename durable with the file's own flush.
func dirSyncUnsupported(error) bool { return true }
