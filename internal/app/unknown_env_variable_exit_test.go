package app_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/testmain"
)

// Regression (found in review, twentieth session): the configuration file
// refuses unknown keys ("so a typo does not silently fall back to a
// default", config.LoadFile), but an AGENTFLEET_* variable that named no
// key was ignored without a word. The worst case is the NATS URL: with
// AGENTFLEET_NATSURL (or AGENTFLEET_NATS_ULR) in a deployment, nats.url
// stayed empty, the worker switched itself to embedded mode, started a
// private nats-server, and reported "worker consuming" (and ready on
// /readyz) while it took nothing from the fleet's server: the very
// situation Validate refuses for nats.url + embedded.enabled. The same
// typo in AGENTFLEET_REDIS_URL put a fresh fleet on NATS KV stores. The
// worker now refuses a likely typo of a known name (config.CheckEnv): exit
// 2, naming the variable and the known name, before it starts anything.
func TestUnknownAgentfleetVariableExitsTwo(t *testing.T) {
	srv := natstest.RunServer(t) // the fleet's server the operator meant
	cmd := exec.Command(workerBin, "--name", "w-unknown-env")
	cmd.Env = append(os.Environ(), testmain.Env(testmain.Worker),
		"AGENTFLEET_NATSURL="+srv.ClientURL(), // the typo: no '_' between NATS and URL
		"AGENTFLEET_EMBEDDED_PORT=-1", "AGENTFLEET_EMBEDDED_DATA_DIR="+t.TempDir(),
		"AGENTFLEET_METRICS_ADDR=", "AGENTFLEET_LOG_LEVEL=info")
	lines := startLines(t, cmd)
	var out strings.Builder
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				if code := cmd.ProcessState.ExitCode(); code != 2 {
					t.Errorf("the worker exited %d, want 2 (bad configuration); stderr:\n%s", code, out.String())
				}
				if !strings.Contains(out.String(), "AGENTFLEET_NATSURL: did you mean AGENTFLEET_NATS_URL?") {
					t.Errorf("the error does not name AGENTFLEET_NATSURL and suggest AGENTFLEET_NATS_URL; stderr:\n%s", out.String())
				}
				if strings.Contains(out.String(), srv.ClientURL()) {
					t.Errorf("the error quotes the variable's value; stderr:\n%s", out.String())
				}
				return
			}
			out.WriteString(l + "\n")
			if strings.Contains(l, "worker consuming") || strings.Contains(l, "embedded NATS server") {
				t.Errorf("AGENTFLEET_NATSURL (a typo of AGENTFLEET_NATS_URL) did not stop the worker: it runs an embedded server "+
					"and consumes, while the fleet's server %s gets no consumer; stderr:\n%s", srv.ClientURL(), out.String())
				return
			}
		case <-deadline:
			t.Fatalf("the worker neither started consuming nor exited; stderr:\n%s", out.String())
		}
	}
}

// Regression (found in review, twentieth session): every unknown
// AGENTFLEET_ variable was refused (exit 2), those Kubernetes sets for a
// Service named agentfleet and one a platform sets (AGENTFLEET_VERSION)
// included: every pod crash-looped. The worker now starts with them: a
// warning on stderr names AGENTFLEET_VERSION, none names Kubernetes'
// variables, and a SIGTERM while it waits for NATS still exits 0.
func TestUnknownAgentfleetVariableThatIsNoTypoIsAWarning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close() // NATS down: the worker waits, which shows it was not refused
	cmd := exec.Command(workerBin, "--name", "w-unknown-env-warning")
	cmd.Env = append(os.Environ(), testmain.Env(testmain.Worker),
		"AGENTFLEET_NATS_URL=nats://"+closed, "AGENTFLEET_METRICS_ADDR=", "AGENTFLEET_LOG_LEVEL=info",
		"AGENTFLEET_VERSION=s3cr3t-1.2.3",
		"AGENTFLEET_SERVICE_HOST=10.96.0.12", "AGENTFLEET_SERVICE_PORT=9090", "AGENTFLEET_PORT=tcp://10.96.0.12:9090",
		"AGENTFLEET_PORT_9090_TCP_ADDR=10.96.0.12", "AGENTFLEET_NATS_SERVICE_HOST=10.96.0.13", "AGENTFLEET_NATS_PORT=tcp://10.96.0.13:4222")
	lines := startLines(t, cmd)
	var out strings.Builder
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("the worker exited %d before it waited for NATS; stderr:\n%s", cmd.ProcessState.ExitCode(), out.String())
			}
			out.WriteString(l + "\n")
			if strings.Contains(l, "NATS not reachable; retrying") {
				break wait
			}
		case <-deadline:
			t.Fatalf("the worker never waited for NATS; stderr:\n%s", out.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		out.WriteString(l + "\n")
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("SIGTERM: exit %d, want 0; stderr:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "worker: warning: AGENTFLEET_VERSION: ") {
		t.Errorf("no warning names AGENTFLEET_VERSION; stderr:\n%s", out.String())
	}
	if strings.Contains(out.String(), "s3cr3t") {
		t.Errorf("the warning quotes the value; stderr:\n%s", out.String())
	}
	if strings.Contains(out.String(), "SERVICE_HOST") || strings.Contains(out.String(), "AGENTFLEET_PORT") ||
		strings.Contains(out.String(), "AGENTFLEET_NATS_PORT") {
		t.Errorf("a warning names a variable Kubernetes sets for a Service; stderr:\n%s", out.String())
	}
}

// startLines starts cmd (killed when the test ends if it still runs) and
// returns its stderr's lines, closed when the process closes stderr.
func startLines(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
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
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}
