package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client/clienttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-third session): SubmitAndAwait's
// look-up before sending, lost in a NATS restart, waited out the caller's
// deadline and returned "not submitted: context deadline exceeded".
//
// SubmitAndAwait looks a request with an id of its own up before sending
// it, with the caller's whole context. A look-up whose reply is lost in a
// server restart is never answered (nats.go does not resend a request
// after a reconnect), so SubmitAndAwait sits in it until the caller's
// deadline and returns "not submitted: context deadline exceeded": an
// error that matches context.DeadlineExceeded, as a result that did not
// come in time does, for a request that was never sent although the
// server was back within a second. Await bounds each of its look-ups
// (LookupLimit) for exactly this, and the producer CLI's own look-up
// before a send is bounded and tried again (producercli.lookup); the
// library call is not.
func TestSubmitAndAwaitSurvivesALookupLostInARestart(t *testing.T) {
	tg := streamstest.Embedded(t)
	clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)
	proxy := natstest.StartCutProxy(t, strings.TrimPrefix(tg.NC.ConnectedUrl(), "nats://"))
	nc, js, reconnected := proxy.Connect(t)
	c := newClientOn(t, tg, js, nc)

	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer tcancel()
	// Warm the results-stream handle: the first JetStream API request of
	// SubmitAndAwait is then its look-up.
	if _, err := c.Lookup(tctx, "warm-up"); err == nil {
		t.Fatal("test premise: warm-up has a result")
	}

	req := request("hello after a restart")
	req.InvocationID = "r3-submit-lost-lookup"
	proxy.SetSwallow(true)
	type out struct {
		res *envelope.Result
		err error
	}
	done := make(chan out, 1)
	actx, acancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer acancel()
	go func() {
		res, err := c.SubmitAndAwait(actx, req)
		done <- out{res, err}
	}()
	recv(tctx, t, proxy.Swallowed()) // the look-up is in flight and will never be answered
	proxy.Cut()                      // the server restarts
	recv(tctx, t, reconnected)

	o := recv(tctx, t, done)
	if o.err != nil {
		t.Fatalf("SubmitAndAwait across a restart during its look-up = %v (matches context.DeadlineExceeded: %v); "+
			"want the request sent once the client reconnected, and its result",
			o.err, errors.Is(o.err, context.DeadlineExceeded))
	}
	if o.res.Status != envelope.StatusCompleted {
		t.Fatalf("SubmitAndAwait = %+v; want completed", o.res)
	}
}
