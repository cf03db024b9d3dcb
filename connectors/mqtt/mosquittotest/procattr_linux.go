package mosquittotest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the broker die with the test process, so that a test
// killed on timeout leaves no broker behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
