package replayer

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Regression (found in review, twentieth session): an AGENTFLEET_ variable
// that no command reads was ignored without a word (a typo of
// AGENTFLEET_NATS_URL fell back to the default server). The replayer
// refuses a likely typo of a known name like an unknown key of its file:
// exit 3, naming it and the known name; a worker key (one environment for
// the whole deployment) is accepted.
func TestUnknownAgentfleetVariableIsAUsageError(t *testing.T) {
	env := map[string]string{"AGENTFLEET_NATS_URL": "nats://127.0.0.1:1"}
	environ := []string{"AGENTFLEET_NATS_URL=nats://127.0.0.1:1", "AGENTFLEET_WORKER_CONCURRENCY=4", "AGENTFLEET_REPLAY_RAET=5"}
	var stderr bytes.Buffer
	code := Run(context.Background(), []string{"list"}, Env{Stderr: &stderr,
		Lookup:  func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Environ: func() []string { return environ }})
	if code != ExitUsage {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, ExitUsage, stderr.String())
	}
	if !strings.Contains(stderr.String(), "AGENTFLEET_REPLAY_RAET: did you mean AGENTFLEET_REPLAY_RATE?") {
		t.Errorf("the error does not name the variable and the closest known one; stderr:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "AGENTFLEET_WORKER_CONCURRENCY") {
		t.Errorf("a worker key was refused; stderr:\n%s", stderr.String())
	}
}

// Regression (found in review, twentieth session): every unknown
// AGENTFLEET_ variable was refused (exit 3), those Kubernetes sets for a
// Service named agentfleet and one a platform sets (AGENTFLEET_VERSION)
// included. The replayer now runs with them: "dlq-replayer: warning:"
// names AGENTFLEET_VERSION, nothing names Kubernetes' variables, and the
// command's exit code is its own (here 1: NATS is down), not 3.
func TestUnknownAgentfleetVariableThatIsNoTypoIsAWarning(t *testing.T) {
	env := map[string]string{"AGENTFLEET_NATS_URL": "nats://127.0.0.1:1"}
	environ := []string{"AGENTFLEET_NATS_URL=nats://127.0.0.1:1", "AGENTFLEET_VERSION=s3cr3t-1.2.3",
		"AGENTFLEET_SERVICE_HOST=10.96.0.12", "AGENTFLEET_PORT=tcp://10.96.0.12:9090", "AGENTFLEET_PORT_9090_TCP_PORT=9090"}
	var stderr bytes.Buffer
	code := Run(context.Background(), []string{"list"}, Env{Stderr: &stderr,
		Lookup:  func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Environ: func() []string { return environ }})
	if code != ExitError {
		t.Errorf("exit %d, want %d (NATS down): variables that misspell no key are no configuration error; stderr:\n%s", code, ExitError, stderr.String())
	}
	if !strings.Contains(stderr.String(), "dlq-replayer: warning: AGENTFLEET_VERSION: ") {
		t.Errorf("no warning names AGENTFLEET_VERSION; stderr:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "s3cr3t") {
		t.Errorf("the warning quotes the value; stderr:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "SERVICE_HOST") || strings.Contains(stderr.String(), "AGENTFLEET_PORT") {
		t.Errorf("a warning names a variable Kubernetes sets for a Service; stderr:\n%s", stderr.String())
	}
}
