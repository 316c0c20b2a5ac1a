package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review of this session's fix, twenty-fifth
// session): AwaitAfter took the first result it found at afterSeq for the
// earlier one even when a look-up before, in the same call, had found no
// result (the results stream recreated before AwaitAfter began: the
// earlier result provably gone). A producer holding a dead_lettered result
// at sequence 1 (a small or new fleet) called AwaitAfter(1) after the
// results stream was recreated; the replay's completed result was stored
// at sequence 1 of the new stream while it waited, and AwaitAfter ignored
// it and waited out its whole context. Once a look-up has found no result,
// a result at afterSeq is newer.
func TestAwaitAfterSeesAResultAtItsSequenceAfterALookupFoundNone(t *testing.T) {
	tg := streamstest.Embedded(t)
	c := newClient(t, tg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publish := func(inv string, st envelope.Status) {
		t.Helper()
		publishResult(ctx, t, tg, &envelope.Result{InvocationID: inv, Status: st})
	}
	const id = "regression8-recreated-empty"
	publish(id, envelope.StatusDeadLettered) // the stream's first message: seq 1
	before, err := c.Lookup(ctx, id)
	if err != nil || before.Status != envelope.StatusDeadLettered {
		t.Fatalf("premise: Lookup = %+v, %v", before, err)
	}
	// Recreated before AwaitAfter begins: the dead_lettered result is gone.
	recreateResults(ctx, t, tg)
	if _, err := c.Lookup(ctx, id); err == nil {
		t.Fatal("premise: a result is stored in the recreated stream")
	}

	done, early, ok := startAwait(ctx, t, c, 6*time.Second, func(actx context.Context) (*envelope.Result, error) {
		return c.AwaitAfter(actx, id, before.Seq)
	})
	if !ok { // the first look-up was answered: no result
		t.Fatalf("premise: AwaitAfter returned %+v, %v before anything was stored", early.res, early.err)
	}
	// The replay's result, stored after AwaitAfter began, at the same
	// sequence as the old one.
	publish(id, envelope.StatusCompleted)
	if now, err := c.Lookup(ctx, id); err != nil || now.Seq != before.Seq {
		t.Fatalf("premise: the completed result is at %+v (%v), the dead_lettered one was at %d", now, err, before.Seq)
	}
	a := <-done
	if a.err != nil || a.res.Status != envelope.StatusCompleted {
		t.Fatalf("AwaitAfter(%d) whose first look-up found no result (the results stream recreated before it began), "+
			"with the completed result stored after it began at the same sequence = %+v, %v; want the completed result",
			before.Seq, a.res, a.err)
	}
}
