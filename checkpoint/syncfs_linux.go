package checkpoint

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFiles makes the files just written in dir durable with one
// syncfs(2) of its file system rather than an fsync each: a checkpoint
// writes many chunks at once.
func syncFiles(dir string, _ []string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
