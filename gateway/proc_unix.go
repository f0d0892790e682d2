//go:build unix

package gateway

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr starts the upstream in its own process group, so that
// stopping it reaches what it started too.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminate sends SIGTERM to the process's group.
func terminate(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// kill sends SIGKILL to the process's group.
func kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
