//go:build !unix

package gateway

import (
	"os"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

// terminate has no gentler form here than kill.
func terminate(p *os.Process) { _ = p.Kill() }

func kill(p *os.Process) { _ = p.Kill() }
