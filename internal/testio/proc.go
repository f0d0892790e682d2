package testio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Proc is an outside server process a test harness runs (postgres, weed),
// its output going to a log file that failures quote.
type Proc struct {
	Name string // for messages
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // the process's exit status, set before done is closed
}

// StartProc starts cmd with its stdout and stderr in the file logPath.
func StartProc(name string, cmd *exec.Cmd, logPath string) (*Proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer logf.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// WaitReady calls ready every interval until it returns nil; it fails
// (quoting the log's end) when the process exits first or ctx ends.
func (p *Proc) WaitReady(ctx context.Context, interval time.Duration, ready func(context.Context) error) error {
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v): %s", p.Name, p.err, p.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready: %w (last: %v): %s", p.Name, ctx.Err(), last, p.LogTail())
		case <-time.After(interval):
		}
	}
}

// LogTail is the last 4 KB of the process's log.
func (p *Proc) LogTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return strings.TrimSpace(string(b))
}

// Stop sends sig and waits up to grace for the process to exit, then
// kills it.
func (p *Proc) Stop(sig os.Signal, grace time.Duration) error {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return errors.New(p.Name + ": did not stop in " + grace.String() + "; killed")
}
