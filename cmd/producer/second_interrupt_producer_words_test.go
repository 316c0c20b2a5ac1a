package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/shutdown"
)

const review7dRunMainEnv = "PRODUCER_REVIEW7D_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(review7dRunMainEnv) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}

// Regression (found in review, twenty-fourth session): the producer's
// second ^C spoke the worker's words, "exiting at once (what was in hand
// is redelivered)": the producer holds no message
// that JetStream redelivers (a request it published stays published, one
// it had not sent is not sent; a rerun of a batch file skips what
// completed). Commit 2d85359 gave the replayer words of its own
// (shutdown.NotifyWith) and left cmd/producer on shutdown.Notify.
func TestProducerSecondInterruptSpeaksItsOwnWords(t *testing.T) {
	var urls []string
	accepted := make(chan struct{}, 1)
	var mu sync.Mutex
	var held []net.Conn
	var wg sync.WaitGroup
	var lns []net.Listener
	for range 5 {
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
	cmd := exec.Command(os.Args[0], "await", "inv-review7d")
	cmd.Env = []string{review7dRunMainEnv + "=1", "AGENTFLEET_NATS_URL=" + strings.Join(urls, ",")}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
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
	<-accepted
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
	text := strings.Join(out, "\n")
	t.Logf("exit %d\nstderr:\n%s", cmd.ProcessState.ExitCode(), text)
	if strings.Contains(text, shutdown.WorkerForcedNote) {
		t.Fatalf("the producer's second ^C says the worker's %q, which is not true of a producer:\n%s", shutdown.WorkerForcedNote, text)
	}
	if !strings.Contains(text, producercli.ForcedExitNote) {
		t.Fatalf("the producer's second ^C does not say what exiting at once leaves behind (%q):\n%s", producercli.ForcedExitNote, text)
	}
}
