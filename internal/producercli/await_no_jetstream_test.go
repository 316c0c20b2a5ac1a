package producercli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

// Regression (found in review of this session's fix, twenty-third
// session): `producer await` against a server without JetStream waited out
// its --timeout and exited 3 "no result within" instead of naming the
// cause.
//
// `producer await` against a NATS server that has no JetStream at all (a plain nats-server started without -js, or a
// --nats-url pointing at the wrong server) used to fail at once with exit 1
// and "no responders". Since Await's first look-up rides out
// nats.ErrNoResponders it waits the whole --timeout (2 minutes by default)
// and reports "no result for <id> within <timeout>", exit 3: a
// misconfigured server is reported as a result that did not come in time,
// and the cause is never named. The producer's own look-up (lookup.go) rides
// out no responders too, but ends with ErrLookupUnanswered naming the cause
// (exit 1); await now does the same (client.ErrUnanswered).
func TestAwaitOnAServerWithoutJetStreamNamesTheCause(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })

	var out, errb bytes.Buffer
	env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := producercli.Run(context.Background(), []string{"--nats-url", s.ClientURL(), "--timeout", "4s",
		"await", "await-no-js"}, env)
	t.Logf("exit %d\nstdout: %q\nstderr: %q", code, out.String(), errb.String())
	msg := strings.ToLower(errb.String())
	if code == producercli.ExitTimeout || !(strings.Contains(msg, "no responders") || strings.Contains(msg, "jetstream")) {
		t.Fatalf("await on a server without JetStream: exit %d, stderr %q; want an error that names the cause "+
			"(no JetStream responders), not exit %d \"no result within --timeout\"", code, errb.String(), producercli.ExitTimeout)
	}
}
