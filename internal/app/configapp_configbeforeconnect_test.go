package app_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/testmain"
)

// Regression (found in review, twenty-second session): model settings that
// can never work (unparsable model.sim.faults, an openai model without
// OPENAI_API_KEY or openai_base_url) exit 2 before the worker waits for
// NATS (StartWorker builds the provider before Connect).
//
// A model configuration that can never work (simulated faults that do not
// parse, a real model without its API key) is bad configuration: exit 2
// (ErrBadConfig, WorkerMain's doc). It is found only after Connect, so with
// NATS down the worker waits for NATS for ever ("NATS not reachable;
// retrying") and never says the configuration is wrong; CheckDerived exists
// for exactly this (values found "before anything connects").
func TestModelConfigErrorsFoundBeforeWaitingForNATS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"sim faults that do not parse", []string{"AGENTFLEET_MODEL_SIM_FAULTS=bogus"}},
		{"openai without a key", []string{"AGENTFLEET_MODEL_SPEC=openai:gpt-4o", "OPENAI_API_KEY="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(workerBin, "--name", "w-review-model-config")
			cmd.Env = append(os.Environ(), testmain.Env(testmain.Worker),
				"AGENTFLEET_NATS_URL=nats://"+closed, "AGENTFLEET_METRICS_ADDR=", "AGENTFLEET_LOG_LEVEL=warn")
			cmd.Env = append(cmd.Env, tc.env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 2 {
					t.Errorf("exit %v, want 2; output:\n%s", err, out.String())
				}
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Errorf("bad model configuration with NATS down: still waiting for NATS after 15s, want exit 2 at once; output:\n%s", out.String())
			}
		})
	}
}
