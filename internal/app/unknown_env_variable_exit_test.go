package app_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
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
// worker now refuses it (config.CheckEnv): exit 2, naming the variable and
// the closest known name, before it starts anything.
func TestUnknownAgentfleetVariableExitsTwo(t *testing.T) {
	srv := natstest.RunServer(t) // the fleet's server the operator meant
	cmd := exec.Command(workerBin, "--name", "w-unknown-env")
	cmd.Env = append(os.Environ(), testmain.Env(testmain.Worker),
		"AGENTFLEET_NATSURL="+srv.ClientURL(), // the typo: no '_' between NATS and URL
		"AGENTFLEET_EMBEDDED_PORT=-1", "AGENTFLEET_EMBEDDED_DATA_DIR="+t.TempDir(),
		"AGENTFLEET_METRICS_ADDR=", "AGENTFLEET_LOG_LEVEL=info")
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
