//go:build !windows

package spool

import (
	"fmt"
	"os"
)

// syncDir makes the creation, renaming and removal of files in dir
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("spool: sync %s: %w", dir, err)
	}
	return nil
}
