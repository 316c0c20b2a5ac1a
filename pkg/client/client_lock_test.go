package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-first session): the client's lock is not held
// while the results stream handle is fetched, so one caller's lost fetch does not
// hold up another caller's Await of a stored result.
//
// Client is "safe for concurrent use", and Await's look-ups are bounded
// (LookupLimit, 2 s) so that a look-up lost in a server restart does not
// keep Await from its result (README, sixteenth session). But the results
// stream handle is fetched (js.Stream, a $JS.API.STREAM.INFO request) while
// the client's mutex is held, and the mutex is taken without regard to the
// caller's context. So while one caller's first look-up is lost (here: a
// Lookup with a 10 s context, as SubmitAndAwait makes with the caller's
// whole context), every other call on the client blocks on the mutex past
// its own bounds: an Await for a result that is already stored neither
// returns it nor looks at its subscription until the lost look-up gives up.
func TestAwaitIsNotHeldByAnotherCallersLostStreamLookup(t *testing.T) {
	tg := streamstest.Embedded(t)
	proxy := natstest.StartCutProxy(t, strings.TrimPrefix(tg.NC.ConnectedUrl(), "nats://"))
	nc, js, _ := proxy.Connect(t)
	c := newClientOn(t, tg, js, nc)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const id = "inv-stored-already"
	b, _ := (&envelope.Result{InvocationID: id, Status: envelope.StatusCompleted, Content: "done"}).Encode()
	if _, err := tg.JS.Publish(ctx, tg.Cfg.ResultSubject(id), b); err != nil {
		t.Fatal(err)
	}

	// The connection's request inbox is in place (as after any earlier
	// request), so that only A's request is lost below.
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatal(err)
	}
	// Caller A: its first look-up (the results stream's info) is lost.
	proxy.SetSwallow(true)
	actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer acancel()
	aDone := make(chan error, 1)
	go func() {
		_, err := c.Lookup(actx, "some-other-invocation")
		aDone <- err
	}()
	recv(ctx, t, proxy.Swallowed())
	proxy.SetSwallow(false) // the connection works again for everything after

	// Caller B: awaits a result stored before it began.
	bDone := make(chan awaited, 1)
	go func() {
		res, err := c.Await(ctx, id)
		bDone <- awaited{res, err}
	}()
	select {
	case o := <-bDone:
		if o.err != nil || o.res.Content != "done" {
			t.Fatalf("Await = %+v, %v; want the stored result", o.res, o.err)
		}
	case err := <-aDone:
		o := recv(ctx, t, bDone)
		t.Fatalf("Await of a stored result returned (%+v, %v) only after another caller's lost look-up gave up (%v): it waited on the client's lock, past its own 2 s look-up bound", o.res, o.err, err)
	}
	<-aDone
}
