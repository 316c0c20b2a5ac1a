package producercli_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-fifth session): the producer always
// used the default streams and subject prefixes, whatever the environment
// set for the worker (AGENTFLEET_STREAMS_RESULT_PREFIX, ...): with a fleet
// configured with other ones, the requests went where no worker reads, or
// every batch line timed out waiting on subjects no result is published
// to. The producer now reads the requests' and the results' stream names
// and subject prefixes from the worker's variables; a value the worker
// would refuse is a usage error (exit 2) naming the variable.
func TestProducerUsesTheFleetsStreamSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, _, s := natstest.JetStream(t)
	vars := map[string]string{
		"AGENTFLEET_STREAMS_REQUESTS":       "FLEET2_REQUESTS",
		"AGENTFLEET_STREAMS_RESULTS":        "FLEET2_RESULTS",
		"AGENTFLEET_STREAMS_REQUEST_PREFIX": "fleet2.requests",
		"AGENTFLEET_STREAMS_RESULT_PREFIX":  "fleet2.results",
	}
	known := config.KnownEnvNames()
	for name := range vars {
		if !slices.Contains(known, name) {
			t.Fatalf("test premise: %s is not a variable the worker reads", name)
		}
	}
	sc := streams.Config{RequestsStream: "FLEET2_REQUESTS", ResultsStream: "FLEET2_RESULTS",
		RequestPrefix: "fleet2.requests", ResultPrefix: "fleet2.results"}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	run := func(vars map[string]string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
		code := producercli.Run(ctx, append([]string{"--nats-url", s.ClientURL(), "--timeout", "5s"}, args...), env)
		return code, out.String(), errb.String()
	}

	code, _, stderr := run(vars, "send", "--agent", "support", "--user", "u1", "--session", "s1", "--invocation", "inv-fleet2", "hello")
	if code != producercli.ExitOK {
		t.Fatalf("send with the fleet's stream settings: exit %d\n%s", code, stderr)
	}
	m, err := js.Stream(ctx, "FLEET2_REQUESTS")
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := m.GetLastMsgForSubject(ctx, "fleet2.requests.support"); err != nil || !bytes.Contains(msg.Data, []byte("inv-fleet2")) {
		t.Fatalf("the request is not on fleet2.requests.support in FLEET2_REQUESTS: %v", err)
	}

	// The result the fleet publishes on its own prefix is the one await finds.
	res := &envelope.Result{V: envelope.Version, InvocationID: "inv-fleet2", Status: envelope.StatusCompleted, Content: "done"}
	b, err := res.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "fleet2.results.inv-fleet2", b); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(vars, "await", "inv-fleet2")
	if code != producercli.ExitOK || !strings.Contains(out, "done") {
		t.Fatalf("await with the fleet's stream settings: exit %d, out %q\n%s", code, out, stderr)
	}

	// A value the worker would refuse: a usage error naming the variable.
	bad := map[string]string{"AGENTFLEET_STREAMS_RESULTS": "FLEET2_REQUESTS", "AGENTFLEET_STREAMS_REQUESTS": "FLEET2_REQUESTS"}
	code, _, stderr = run(bad, "await", "inv-fleet2")
	if code != producercli.ExitUsage || !strings.Contains(stderr, "AGENTFLEET_STREAMS_RESULTS") {
		t.Fatalf("await with two equal stream names: exit %d, stderr %q; want exit %d naming the variables", code, stderr, producercli.ExitUsage)
	}
	if code, _, stderr := run(bad, "send", "--help"); code != producercli.ExitOK {
		t.Errorf("send --help with a bad stream setting: exit %d, want %d\n%s", code, producercli.ExitOK, stderr)
	}
}
