package spool

// syncDir does nothing: Windows cannot flush a directory (FlushFileBuffers
// needs a handle opened for writing, which a directory cannot be). NTFS
// journals its metadata, so a file created, renamed or removed just before
// the machine died is so entirely or not at all.
func syncDir(string) error { return nil }
