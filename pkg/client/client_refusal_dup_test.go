package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/client/clienttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-first session): a resubmission dropped as a
// duplicate of a later resend that is still running awaits that run's result, not
// the stored BAD_INPUT refusal.
//
// An invocation was refused as BAD_INPUT long ago (its agent was not
// deployed; the refused request is out of the requests stream's duplicate
// window). The agent is deployed now and the invocation is sent again: that
// resend is stored and a worker is running it. A second SubmitAndAwait with
// the same id (the user's `producer send --wait` timed out on the first try
// and they run it again, or a batch is re-run) finds the old refusal stored
// (the run has not finished) and its Send is dropped as a duplicate, a
// duplicate of the resend that is running, not of the refused request.
// AwaitSent assumes every duplicate is one of the refused request and
// returns the stale refusal at once ("failed BAD_INPUT", the producer's exit
// 4 and "its result is the earlier BAD_INPUT refusal"), while the invocation
// runs and completes. It should await the result that follows the refusal.
func TestSubmitAndAwaitDuplicateOfARunningResendIsNotTheOldRefusal(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := newClient(t, tg)
	const id = "inv-refused-resent-twice"
	storeRefusal(ctx, t, tg, id) // the old refusal; its request is long gone
	w := clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo, clienttest.Held())

	// The first resend: stored, taken by a worker, still running.
	first := request("again")
	first.InvocationID = id
	if rec, err := c.Send(ctx, first); err != nil || rec.Duplicate {
		t.Fatalf("first resend = %+v, %v", rec, err)
	}
	if got := recv(ctx, t, w.Taken()); got != id {
		t.Fatalf("worker took %q", got)
	}

	// The second try, while the run is in progress.
	waiting := make(chan string, 1)
	client.SetWaitingHook(c, func(id string) { waiting <- id })
	done := make(chan awaited, 1)
	go func() {
		again := request("again")
		again.InvocationID = id
		res, err := c.SubmitAndAwait(ctx, again)
		done <- awaited{res, err}
	}()
	select {
	case o := <-done:
		t.Fatalf("SubmitAndAwait returned %+v, %v while the resend it duplicates was still running; want the result of that run", o.res, o.err)
	case <-waiting:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	w.Release()
	o := recv(ctx, t, done)
	if o.err != nil || o.res.Status != envelope.StatusCompleted || o.res.Content != "echo: again" {
		t.Fatalf("SubmitAndAwait = %+v, %v; want the completed run", o.res, o.err)
	}
}

// A resubmission dropped as a duplicate of a resend that was answered (and
// so removed from the requests stream) after the caller looked the id up
// gets that resend's result, not the refusal it looked up.
func TestAwaitSentDuplicateOfAnAnsweredResendReturnsItsResult(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := newClient(t, tg)
	const id = "inv-refused-resend-answered"
	storeRefusal(ctx, t, tg, id)
	before, err := c.Lookup(ctx, id) // what a caller found before its Send
	if err != nil || !before.RefusedAsBadInput() {
		t.Fatalf("Lookup = %+v, %v", before, err)
	}
	clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo)

	// Another caller's resend runs and completes meanwhile.
	first := request("again")
	first.InvocationID = id
	if _, err := c.SubmitAndAwait(ctx, first); err != nil {
		t.Fatal(err)
	}
	// The worker removes the request once it has answered it.
	s, err := tg.JS.Stream(ctx, tg.Cfg.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	for s.CachedInfo().State.Msgs != 0 {
		time.Sleep(10 * time.Millisecond)
		if _, err := s.Info(ctx); err != nil {
			t.Fatal(err)
		}
	}

	again := request("again")
	again.InvocationID = id
	rec, err := c.Send(ctx, again)
	if err != nil || !rec.Duplicate {
		t.Fatalf("Send = %+v, %v; want a duplicate", rec, err)
	}
	res, err := c.AwaitSent(ctx, rec, before)
	if err != nil || res.Status != envelope.StatusCompleted || res.Content != "echo: again" {
		t.Fatalf("AwaitSent = %+v, %v; want the answered resend's result", res, err)
	}
}
