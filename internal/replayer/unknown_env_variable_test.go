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
// refuses it like an unknown key of its file: exit 3, naming it and the
// closest known name; a worker key (one environment for the whole
// deployment) is accepted.
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
