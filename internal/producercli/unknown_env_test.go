package producercli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Regression (left open in the twentieth session's first fix, then
// closed): the producer read AGENTFLEET_NATS_URL and nothing else checked
// its environment, so AGENTFLEET_NATSURL (a typo) made `producer send`
// publish to nats://127.0.0.1:4222, whatever server listens there. Like
// the worker and the replayer it refuses a likely typo of a key (exit 2,
// before connecting) and warns about other unknown AGENTFLEET_ names.
func TestProducerRefusesAMisspeltVariable(t *testing.T) {
	env := func(extra ...string) (Env, *bytes.Buffer) {
		var out, errb bytes.Buffer
		vars := append([]string{"PATH=/bin", "AGENTFLEET_NATS_URL=nats://127.0.0.1:1"}, extra...)
		return Env{Stdout: &out, Stderr: &errb,
			Getenv: func(k string) string {
				for _, kv := range vars {
					if name, v, _ := strings.Cut(kv, "="); name == k {
						return v
					}
				}
				return ""
			},
			Environ: func() []string { return vars }}, &errb
	}
	e, errb := env("AGENTFLEET_NATSURL=nats://fleet:4222")
	if code := Run(context.Background(), []string{"send", "--agent", "support", "--user", "u", "--session", "s", "hello"}, e); code != ExitUsage {
		t.Fatalf("send with AGENTFLEET_NATSURL set: exit %d, want %d (usage)\n%s", code, ExitUsage, errb.String())
	}
	if !strings.Contains(errb.String(), "AGENTFLEET_NATSURL: did you mean AGENTFLEET_NATS_URL?") {
		t.Errorf("stderr does not name the typo and the key:\n%s", errb.String())
	}
	if strings.Contains(errb.String(), "fleet:4222") {
		t.Errorf("stderr quotes the variable's value:\n%s", errb.String())
	}

	// Another unknown name is a warning: the command goes on (and fails
	// here to connect: exit 1, not 2).
	e, errb = env("AGENTFLEET_VERSION=1.2.3")
	code := Run(context.Background(), []string{"send", "--agent", "support", "--user", "u", "--session", "s", "hello"}, e)
	if code == ExitUsage || code == ExitOK {
		t.Fatalf("send with AGENTFLEET_VERSION set: exit %d, want the connect failure\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "producer: warning:") || !strings.Contains(errb.String(), "AGENTFLEET_VERSION") {
		t.Errorf("no warning naming AGENTFLEET_VERSION:\n%s", errb.String())
	}
}
