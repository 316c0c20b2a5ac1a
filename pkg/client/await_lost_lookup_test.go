package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, sixteenth session): Await waits on its subscription and looks the stored result up again now
// and then (doc.go: "So a result published at any moment is seen"). Those
// later look-ups run with Await's whole context: when one's reply is lost
// (the connection to the server drops while it is in flight, as on a
// server restart; nats.go does not resend a request after a reconnect),
// Await sits in that look-up until its deadline, does not read the
// subscription meanwhile, and then reports a timeout, although the result
// was published after the reconnect and delivered to its subscription. A
// producer's send --wait exits 3 and a batch line is "timeout" for an
// invocation that completed.
func TestAwaitSeesALiveResultAfterALookupLostInARestart(t *testing.T) {
	tg := streamstest.Embedded(t)
	proxy := natstest.StartCutProxy(t, tg.NC.ConnectedUrl()[len("nats://"):])

	nc, js, reconnected := proxy.Connect(t)
	c, err := client.New(js, nc, client.Config{
		RequestsStream: tg.Cfg.RequestsStream, ResultsStream: tg.Cfg.ResultsStream,
		RequestPrefix: tg.Cfg.RequestPrefix, ResultPrefix: tg.Cfg.ResultPrefix,
	})
	if err != nil {
		t.Fatal(err)
	}

	// Await found nothing stored and starts waiting: from now on the
	// client's traffic goes nowhere, until the next look-up has been sent.
	const id = "inv-lost-lookup"
	client.SetWaitingHook(c, func(string) { proxy.SetSwallow(true) })
	type out struct {
		res *envelope.Result
		err error
	}
	done := make(chan out, 1)
	actx, acancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer acancel()
	go func() {
		res, err := c.Await(actx, id)
		done <- out{res, err}
	}()

	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer tcancel()
	recv(tctx, t, proxy.Swallowed()) // a look-up is in flight and will never be answered
	proxy.Cut()                      // the server "restarts": the connection drops
	recv(tctx, t, (<-chan struct{})(reconnected))
	// The subscription is back on the server once a flush after the
	// reconnect returns (nats.go resubscribes first).
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	// The worker publishes the result after the restart: it is stored and
	// delivered live to Await's subscription.
	b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: "done"}).Encode()
	if _, err := tg.JS.Publish(tctx, tg.Cfg.ResultSubject(id), b); err != nil {
		t.Fatal(err)
	}

	o := recv(tctx, t, done)
	if o.err != nil {
		t.Fatalf("Await = %v (context deadline exceeded: %v); want the result stored and delivered after the reconnect",
			o.err, errors.Is(o.err, context.DeadlineExceeded))
	}
	if o.res.Content != "done" {
		t.Fatalf("Await = %+v", o.res)
	}
}
