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

	"github.com/agentfleet/agentfleet/internal/replayer"
	"github.com/agentfleet/agentfleet/internal/shutdown"
)

// runMainEnv makes the test binary run main instead of the tests.
const runMainEnv = "DLQ_REPLAYER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): the
// dlq-replayer's second ^C said the worker's words, "exiting at once (what
// was in hand is redelivered)": a replayer holds no message to be
// redelivered, and on-call was not told what an exit at once leaves
// behind. It now says the replayer's own (replayer.ForcedExitNote); the
// worker keeps its words.
//
// The command runs as a process of its own, on NATS URLs of servers that
// accept the connection and never answer: nats.Connect waits on each (it
// does not heed ^C), so the process is still running when the second ^C
// comes.
func TestSecondInterruptSaysWhatTheReplayerLeaves(t *testing.T) {
	// Servers that accept and never answer: 2 s each (nats.go's default
	// connect timeout), long enough for two signals.
	var urls []string
	accepted := make(chan struct{}, 1)
	var mu sync.Mutex
	var held []net.Conn
	var wg sync.WaitGroup
	var lns []net.Listener
	for range 20 {
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

	cmd := exec.Command(os.Args[0], "stats")
	cmd.Env = []string{runMainEnv + "=1", "AGENTFLEET_NATS_URL=" + strings.Join(urls, ",")}
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
	err = cmd.Wait()
	text := strings.Join(out, "\n")
	t.Logf("exit %v\nstderr:\n%s", err, text)
	if cmd.ProcessState.ExitCode() != shutdown.ForcedExitCode {
		t.Fatalf("exit code %d, want %d", cmd.ProcessState.ExitCode(), shutdown.ForcedExitCode)
	}
	if !strings.Contains(text, "interrupt again: exiting at once ("+replayer.ForcedExitNote+")") {
		t.Fatalf("the second ^C's line does not say the replayer's note %q:\n%s", replayer.ForcedExitNote, text)
	}
	if strings.Contains(text, shutdown.WorkerForcedNote) {
		t.Fatalf("the second ^C's line speaks the worker's words %q:\n%s", shutdown.WorkerForcedNote, text)
	}
}
