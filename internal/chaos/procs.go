package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process. Its output goes to a log file in the work
// directory.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // set before done is closed
}

// procs tracks every child so that Close can kill whatever still runs.
type procs struct {
	mu  sync.Mutex
	all []*proc
}

func (ps *procs) add(p *proc) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.all = append(ps.all, p)
}

// killAll SIGKILLs every child still running and waits for it.
func (ps *procs) killAll() {
	ps.mu.Lock()
	all := append([]*proc(nil), ps.all...)
	ps.mu.Unlock()
	for _, p := range all {
		p.stop(syscall.SIGKILL, 0)
	}
}

// startProc starts bin with args and env, output appended to
// logDir/name.log. The child gets its own process group (a terminal's ^C
// reaches only the harness, which then stops it) and is SIGKILLed by the
// kernel if the harness dies.
func startProc(ps *procs, logDir, name, bin string, args, env []string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos: %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("chaos: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	ps.add(p)
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits up to grace for the exit, then SIGKILLs and
// waits.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	if sig != syscall.SIGKILL {
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// freePort returns a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("chaos: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits until 127.0.0.1:port accepts connections, p exits,
// or timeout passes.
func waitListening(ctx context.Context, p *proc, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if p.exited() {
			return fmt.Errorf("chaos: %s exited before listening on %s (log %s): %v", p.name, addr, p.logPath, p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: %s not listening on %s after %v (log %s)", p.name, addr, timeout, p.logPath)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: waiting for %s: %w", p.name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// findBinary returns path if set, else name on PATH or in /usr/sbin or
// /usr/local/bin.
func findBinary(path, name string) (string, error) {
	if path != "" {
		return path, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("chaos: %s: %w", name, exec.ErrNotFound)
}

// ServerBinaries returns the nats-server and redis-server binaries the run
// would use, or an error naming the one that is missing.
func ServerBinaries(cfg Config) (natsServer, redisServer string, err error) {
	n, err1 := findBinary(cfg.NATSServer, "nats-server")
	r, err2 := findBinary(cfg.RedisServer, "redis-server")
	return n, r, errors.Join(err1, err2)
}

// goBuild builds pkg (e.g. ./cmd/worker) of the module in moduleDir into
// out.
func goBuild(ctx context.Context, moduleDir, pkg, out string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Env = os.Environ()
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: go build %s: %w: %s", pkg, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// childEnv is the environment of every child: the harness's, minus any
// AGENTFLEET_* setting (so the caller's configuration does not leak into
// the fleet), plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AGENTFLEET_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
