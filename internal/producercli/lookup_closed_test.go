package producercli_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
)

// Regression (found in review, seventeenth session): TestLookupDoesNotRetryAClosedConnection: a *nats.Conn that is
// closed (the producer's default MaxReconnects ran out, or the CLI closed
// it) never comes back. lookup treats nats.ErrConnectionClosed like a lost
// request and retries it with backoff for the line's whole --timeout
// (default 2m, per line), then reports ErrLookupUnanswered ("the server
// was unreachable") with the real cause flattened to text. Before the
// change the line failed at once with the connection's error.
func TestLookupDoesNotRetryAClosedConnection(t *testing.T) {
	tg := streamstest.Embedded(t)
	nc, err := nats.Connect(tg.NC.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(js, nc, producercli.ClientConfig(tg.Cfg))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()

	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"closed-1","agent":"support","user_id":"u1","session_id":"s1","text":"hello"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	res, err := producercli.RunBatch(t.Context(), c, lines, producercli.BatchOptions{Concurrency: 1, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.Outcome != producercli.OutcomeError || !errors.Is(r.Err, nats.ErrConnectionClosed) || errors.Is(r.Err, producercli.ErrLookupUnanswered) {
		t.Fatalf("line on a closed connection: outcome %q, err %v; want an error matching nats.ErrConnectionClosed at once, not a look-up retried until --timeout", r.Outcome, r.Err)
	}
}
