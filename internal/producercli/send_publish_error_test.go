package producercli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/producercli"
)

// The streams are missing (the fleet never ran ensure) while something
// listens on the request subjects with plain NATS (an operator's
// `nats sub 'agent.>'`): the publish gets no PubAck and fails after the
// JetStream client's own timeout. The exit codes (doc.go, exit.go) say 1
// for "a publish failed" / "the streams missing", and 3 only for "no result
// within --timeout"; this send exited 3 (the PubAck's deadline), though it
// was not even waiting for a result. The message now says the publish was
// not confirmed and that resending with the same id is safe.
func TestSendPublishWithoutPubAckIsAnErrorNotATimeout(t *testing.T) {
	s := natstest.RunServer(t) // JetStream on, no streams
	tap := natstest.Connect(t, s)
	sub, err := tap.SubscribeSync("agent.requests.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	// The command's own context has no deadline (cmd/producer: signals only).
	code := producercli.Run(context.Background(), []string{"--nats-url", s.ClientURL(), "--timeout", "1m",
		"send", "--agent", "support", "--user", "u", "--session", "s", "hello"}, env)
	t.Logf("stdout: %q\nstderr: %q", out.String(), errb.String())
	if code != producercli.ExitError {
		t.Fatalf("send whose publish got no PubAck: exit %d, want %d (a publish failed; the streams are missing)", code, producercli.ExitError)
	}
	if !strings.Contains(errb.String(), "publish not confirmed") {
		t.Fatalf("stderr does not say the publish was not confirmed: %q", errb.String())
	}
}
