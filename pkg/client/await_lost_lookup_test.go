package client_test

import (
	"context"
	"errors"
	"strings"
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
	// Await found nothing stored and starts waiting: from now on the
	// client's traffic goes nowhere, until the next look-up has been sent.
	o := awaitAcrossACut(t, "inv-lost-lookup",
		func(c *client.Client, proxy *natstest.CutProxy) {
			client.SetWaitingHook(c, func(string) { proxy.SetSwallow(true) })
		},
		(*natstest.CutProxy).Swallowed) // a look-up is in flight and will never be answered
	if o.err != nil {
		t.Fatalf("Await = %v (context deadline exceeded: %v); want the result stored and delivered after the reconnect",
			o.err, errors.Is(o.err, context.DeadlineExceeded))
	}
	if o.res.Content != "done" {
		t.Fatalf("Await = %+v", o.res)
	}
}

// awaited is what Await returned.
type awaited struct {
	res *envelope.Result
	err error
}

// awaitAcrossACut runs Await for id on a client connected to an embedded
// server through a natstest.CutProxy, and loses one of Await's requests in
// a server "restart": arm prepares the client and proxy before Await
// starts (it turns the proxy's swallow mode on, or has it turned on);
// once inFlight's channel is closed (a request of Await's was swallowed
// and will never be answered), the connection is cut. After the reconnect
// (the subscription back on the server) the worker publishes a completed
// result "done" for id, stored and delivered live to Await's subscription.
// It returns what Await returned.
func awaitAcrossACut(t *testing.T, id string, arm func(*client.Client, *natstest.CutProxy),
	inFlight func(*natstest.CutProxy) <-chan struct{}) awaited {
	t.Helper()
	tg := streamstest.Embedded(t)
	proxy := natstest.StartCutProxy(t, strings.TrimPrefix(tg.NC.ConnectedUrl(), "nats://"))
	nc, js, reconnected := proxy.Connect(t)
	c := newClientOn(t, tg, js, nc)

	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer tcancel()
	arm(c, proxy)
	done := make(chan awaited, 1)
	actx, acancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer acancel()
	go func() {
		res, err := c.Await(actx, id)
		done <- awaited{res, err}
	}()
	recv(tctx, t, inFlight(proxy))
	proxy.Cut() // the server "restarts": the connection drops
	recv(tctx, t, reconnected)
	// The subscription is back on the server once a flush after the
	// reconnect returns (nats.go resubscribes first).
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	// The worker publishes the result after the restart.
	b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: "done"}).Encode()
	if _, err := tg.JS.Publish(tctx, tg.Cfg.ResultSubject(id), b); err != nil {
		t.Fatal(err)
	}
	return recv(tctx, t, done)
}
