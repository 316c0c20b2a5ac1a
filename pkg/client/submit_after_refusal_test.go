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

// badInput is badInput (not imported: it brings in the agent
// packages; the producer's tests with the real worker check the class
// end to end).
const badInput = "BAD_INPUT"

// storeRefusal stores a BAD_INPUT refusal as the result of id, as the
// worker publishes one for a request it cannot run (an agent it does not
// run yet), and returns its stream sequence.
func storeRefusal(ctx context.Context, t *testing.T, tg streamstest.Target, id string) uint64 {
	t.Helper()
	b, err := (&envelope.Result{InvocationID: id, Status: envelope.StatusFailed,
		ErrorClass: badInput, UserMessage: "The request was rejected"}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	ack, err := tg.JS.Publish(ctx, tg.Cfg.ResultSubject(id), b)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

// Regression (found in review, nineteenth session): SubmitAndAwait for an
// invocation id whose stored result is a BAD_INPUT refusal (the worker
// refused the request before it recorded anything, so a resubmission runs)
// awaited with Await, which returns the stored refusal at once: the caller
// was told "failed BAD_INPUT" for a request that runs and completes. It
// returns the result that follows the refusal.
func TestSubmitAndAwaitAfterABadInputRefusalReturnsTheNewResult(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := newClient(t, tg)
	const id = "inv-refused-then-deployed"
	storeRefusal(ctx, t, tg, id)
	w := clienttest.Start(t, tg.JS, tg.Cfg, clienttest.Echo) // the agent is deployed now

	req := request("again")
	req.InvocationID = id
	res, err := c.SubmitAndAwait(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != envelope.StatusCompleted || res.Content != "echo: again" {
		t.Fatalf("SubmitAndAwait = %+v; want this run's result, not the stored refusal", res)
	}
	if n := w.Runs()[id]; n != 1 {
		t.Fatalf("ran %d times", n)
	}
}

// A resubmission after a BAD_INPUT refusal that the requests stream drops
// as a duplicate (the refused request is still within its duplicate
// window) runs nothing new: SubmitAndAwait returns the stored refusal at
// once instead of waiting for a result that never comes.
func TestSubmitAndAwaitReturnsTheRefusalForADuplicate(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := newClient(t, tg)
	const id = "inv-refused-dup"
	req := request("first")
	req.InvocationID = id
	if _, err := c.Send(ctx, req); err != nil { // stored, never taken (no worker)
		t.Fatal(err)
	}
	seq := storeRefusal(ctx, t, tg, id) // what the worker answered it

	again := request("first")
	again.InvocationID = id
	res, err := c.SubmitAndAwait(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != envelope.StatusFailed || res.ErrorClass != badInput {
		t.Fatalf("SubmitAndAwait = %+v; want the stored refusal (seq %d)", res, seq)
	}
}

// RefusedAsBadInput is true for a failed BAD_INPUT result only.
func TestRefusedAsBadInput(t *testing.T) {
	for _, tc := range []struct {
		status envelope.Status
		class  string
		want   bool
	}{
		{envelope.StatusFailed, badInput, true},
		{envelope.StatusFailed, "AUTH", false},
		{envelope.StatusDeadLettered, badInput, false},
		{envelope.StatusCompleted, "", false},
	} {
		s := &client.StoredResult{Result: &envelope.Result{Status: tc.status, ErrorClass: tc.class}}
		if got := s.RefusedAsBadInput(); got != tc.want {
			t.Errorf("RefusedAsBadInput(%s %s) = %v, want %v", tc.status, tc.class, got, tc.want)
		}
	}
}
