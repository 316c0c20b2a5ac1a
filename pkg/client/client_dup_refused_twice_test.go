package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
)

// Regression (seen in a CI run, twenty-first session): a request refused
// twice as BAD_INPUT (redelivered before its Term landed) has two stored
// refusals; a resend inside the duplicate window is dropped, and its answer
// is the refusal the caller looked up, not the second refusal taken for
// the resend's own answer (the producer then lost "run the batch again
// once the window has passed").
func TestDuplicateAfterTwoRefusalsIsTheRefusal(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newClient(t, tg)
	const id = "inv-refused-twice"
	r0 := dupSend(ctx, t, c, id)
	storeRefusal(ctx, t, tg, id)
	before, err := c.Lookup(ctx, id)
	if err != nil || !before.RefusedAsBadInput() {
		t.Fatalf("Lookup = %+v, %v", before, err)
	}
	storeRefusal(ctx, t, tg, id) // the redelivery's refusal
	dupTerm(ctx, t, tg, r0.Sequence)

	rec := dupSend(ctx, t, c, id)
	if !rec.Duplicate {
		t.Fatalf("premise: the resend was not a duplicate: %+v", rec)
	}
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	res, err := c.AwaitSent(actx, rec, before)
	if err != nil || res != before.Result {
		t.Fatalf("AwaitSent = %+v, %v; want the looked-up refusal itself (%p)", res, err, before.Result)
	}
}
