//go:build !linux

package checkpoint

import "os"

// syncFiles makes the files just written durable, an fsync each.
func syncFiles(_ string, paths []string) error {
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
