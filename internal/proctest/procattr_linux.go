package proctest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the process die with the test process, so that a
// test killed on timeout leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
