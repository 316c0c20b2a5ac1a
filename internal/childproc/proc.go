package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Proc is one child process.
type Proc struct {
	// Name names the child in logs; its output goes to LogPath.
	Name    string
	LogPath string // LogPath is the file holding the child's stdout and stderr.
	cmd     *exec.Cmd
	done    chan struct{}
	err     error // set before done is closed
	stopped atomic.Bool
}

// Set tracks children so that KillAll can stop whatever still runs. The
// zero Set is ready to use; it is safe for concurrent use.
type Set struct {
	mu  sync.Mutex
	all []*Proc
}

// Start starts bin with args and env (env is the child's whole
// environment; see Env), its output appended to logDir/name.log, and
// tracks it in s.
func (s *Set) Start(logDir, name, bin string, args, env []string) (*Proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("childproc: %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("childproc: start %s: %w", name, err)
	}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	s.mu.Lock()
	s.all = append(s.all, p)
	s.mu.Unlock()
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// KillAll SIGKILLs every child of s still running and waits for each.
func (s *Set) KillAll() {
	s.mu.Lock()
	all := append([]*Proc(nil), s.all...)
	s.mu.Unlock()
	for _, p := range all {
		p.Stop(syscall.SIGKILL, 0)
	}
}

// PID is the child's process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed when the child has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err blocks until the child has exited and returns what waiting for it
// returned (nil for exit status 0).
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// State is the exited child's state (exit code, signal, CPU times); nil
// while it runs, and nil if waiting for it failed.
func (p *Proc) State() *os.ProcessState {
	if !p.Exited() {
		return nil
	}
	return p.cmd.ProcessState
}

// Stopped reports whether Stop was called on a child that was still
// running: its exit, whatever its status, was asked for.
func (p *Proc) Stopped() bool { return p.stopped.Load() }

// Stop sends sig and waits up to grace for the exit, then SIGKILLs and
// waits. It does nothing to a child that has exited.
func (p *Proc) Stop(sig syscall.Signal, grace time.Duration) {
	if p.Exited() {
		return
	}
	p.stopped.Store(true)
	_ = p.cmd.Process.Signal(sig)
	if sig != syscall.SIGKILL {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}
