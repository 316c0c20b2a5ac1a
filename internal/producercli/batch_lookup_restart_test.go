package producercli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/client/clienttest"
)

// Regression (found in review, seventeenth session): A NATS server restart mid-batch: the producer reconnects (nats.go does so
// by itself) and the worker completes the line's request. But RunBatch first
// looks the line's stored result up with the batch's own context, unbounded
// by the lookupLimit that Await got for exactly this case (README: "each
// look-up while awaiting is bounded (2 s): one lost in a server restart
// (nats.go does not resend it) held Await until --timeout, and a completed
// invocation was reported as a timeout"). The lost look-up runs into the
// JetStream client's default 5 s timeout and the line is reported as
// "timeout" (no result within --timeout, exit 4) although it was never
// submitted and the server was back long before.
func TestBatchSurvivesALookupLostInAServerRestart(t *testing.T) {
	tg := streamstest.Embedded(t)
	w := clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)
	proxy := natstest.StartCutProxy(t, strings.TrimPrefix(tg.NC.ConnectedUrl(), "nats://"))

	nc, js, reconnected := proxy.Connect(t)
	c, err := client.New(js, nc, producercli.ClientConfig(tg.Cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Warm the client's results-stream handle, so that the first JetStream
	// API request of the batch is the line's look-up.
	if _, err := c.Lookup(ctx, "warm-up"); err == nil {
		t.Fatal("test premise: warm-up has a result")
	}

	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"restart-1","agent":"support","user_id":"u1","session_id":"s1","text":"hello"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	proxy.SetSwallow(true)
	type out struct {
		res []producercli.LineResult
		err error
	}
	done := make(chan out, 1)
	// The batch's context has no deadline, as the CLI's (signals only).
	bctx, bcancel := context.WithCancel(context.Background())
	defer bcancel()
	go func() {
		res, err := producercli.RunBatch(bctx, c, lines, producercli.BatchOptions{Concurrency: 1, Timeout: 30 * time.Second})
		done <- out{res, err}
	}()
	select {
	case <-proxy.Swallowed(): // the line's look-up is in flight and will never be answered
	case <-ctx.Done():
		t.Fatal("no look-up sent")
	}
	proxy.Cut() // the server restarts
	select {
	case <-reconnected:
	case <-ctx.Done():
		t.Fatal("no reconnect")
	}
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		bcancel()
		o = <-done
		t.Fatalf("batch did not end: %+v", o.res)
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	r := o.res[0]
	if r.Outcome != producercli.OutcomeCompleted {
		t.Fatalf("line 1 after a server restart: outcome %q (submitted %v, err %v), worker runs %v; want completed: the server was back and the request was never sent",
			r.Outcome, r.Submitted, r.Err, w.Runs())
	}
}
