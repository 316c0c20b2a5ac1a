package app_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/testmain"
)

// cmd/worker documents exit code 0 for a clean stop and 1 for an error.
// A worker started while NATS is down waits for it (ConnectNATSWithRetry);
// a SIGTERM then (a rollout, systemctl stop, a scale-down during a NATS
// outage) stops it cleanly, with nothing in flight: RunWorker returns nil
// for a start-up cut short by its own context, and the process exits 0
// (systemd does not mark the unit failed; Kubernetes sees a Completed
// termination, not an Error).
func TestSIGTERMWhileWaitingForNATSExitsZero(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(workerBin, "--name", "w-sigterm-connecting")
	cmd.Env = append(os.Environ(), testmain.Env(testmain.Worker),
		"AGENTFLEET_NATS_URL=nats://"+closed, "AGENTFLEET_METRICS_ADDR=", "AGENTFLEET_LOG_LEVEL=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	sc := bufio.NewScanner(stderr)
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "NATS not reachable; retrying") {
			break // the signal handler is installed and the worker waits for NATS
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Errorf("SIGTERM while waiting for NATS: exit code %d, want 0 (clean stop); stderr:\n%s", ee.ExitCode(), out.String())
	} else if err != nil {
		t.Fatal(err)
	}
}

// A start-up that fails on its own (here Redis does not answer) is still
// exit code 1: only a stop by the signal is a clean one.
func TestStartupFailureExitsOne(t *testing.T) {
	s := natstest.RunServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(workerBin, "--name", "w-startup-failure")
	cmd.Env = append(os.Environ(), testmain.Env(testmain.Worker), "AGENTFLEET_NATS_URL="+s.ClientURL(),
		"AGENTFLEET_REDIS_URL=redis://"+closed, "AGENTFLEET_METRICS_ADDR=", "AGENTFLEET_LOG_LEVEL=warn")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("Redis down at start: %v, want exit code 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "does not answer") {
		t.Errorf("output does not name the failure:\n%s", out)
	}
}
