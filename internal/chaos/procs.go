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
	"time"

	"github.com/agentfleet/agentfleet/internal/childproc"
)

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
func waitListening(ctx context.Context, p *childproc.Proc, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("chaos: %s exited before listening on %s (log %s): %v", p.Name, addr, p.LogPath, p.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: %s not listening on %s after %v (log %s)", p.Name, addr, timeout, p.LogPath)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: waiting for %s: %w", p.Name, ctx.Err())
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
