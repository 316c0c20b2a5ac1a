// Package shutdowntest runs a command's main twice interrupted, for the
// tests of what a command's second ^C says (shutdown.NotifyWith).
package shutdowntest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// SecondInterrupt runs the test binary (whose TestMain runs main when the
// environment variable runMainEnv is "1") with args, on NATS URLs of
// servers that accept the connection and never answer (nats.Connect waits
// on each, 2 s by default, and does not heed ^C, so the process is still
// running when the second ^C comes), sends it SIGINT, waits for its
// "stopping gracefully" line, sends SIGINT again, waits for its "exiting at
// once" line and returns its whole stderr and its exit code.
func SecondInterrupt(t testing.TB, runMainEnv string, servers int, args ...string) (stderr string, code int) {
	t.Helper()
	var urls []string
	accepted := make(chan struct{}, 1)
	var mu sync.Mutex
	var held []net.Conn
	var wg sync.WaitGroup
	var lns []net.Listener
	for range servers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		urls = append(urls, "nats://"+ln.Addr().String())
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				select {
				case accepted <- struct{}{}:
				default:
				}
			}
		})
	}
	t.Cleanup(func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
		wg.Wait()
		for _, c := range held {
			_ = c.Close()
		}
	})
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{runMainEnv + "=1", "AGENTFLEET_NATS_URL=" + strings.Join(urls, ",")}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var out []string
	waitFor := func(sub string) {
		t.Helper()
		for l := range lines {
			out = append(out, l)
			if strings.Contains(l, sub) {
				return
			}
		}
		t.Fatalf("stderr ended without %q:\n%s", sub, strings.Join(out, "\n"))
	}
	<-accepted // the process is connecting: its signal handler is set
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor("stopping gracefully")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor("again: exiting at once")
	for l := range lines {
		out = append(out, l)
	}
	_ = cmd.Wait()
	return strings.Join(out, "\n"), cmd.ProcessState.ExitCode()
}
