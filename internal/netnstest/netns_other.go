//go:build !linux

package netnstest

import (
	"os/exec"
	"testing"
)

// New fails the test: network namespaces are Linux's.
func New(t testing.TB, n int) *Network {
	t.Helper()
	t.Fatal("netnstest: network namespaces need Linux")
	return nil
}

// dieWithParent does nothing: only Linux has a parent-death signal, and
// New fails before a command runs.
func dieWithParent(*exec.Cmd) {}
