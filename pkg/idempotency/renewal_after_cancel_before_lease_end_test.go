package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review of this session's fix, twenty-third session):
// after cancelling a tool whose renewals failed, the renewer renewed again
// only at its next RenewInterval tick, which lands at or after the lease's
// end, so a store back before that end did not keep the claim and a second
// owner ran the effect while the cancelled tool wound down. The cancel
// comes a margin (a tenth of the lease, at most 2 s) before the lease ends;
// with the shipped RenewInterval (lease/3) the tick lands at the lease end
// itself, with any longer valid interval (here 2.4 s of a 3 s lease, which
// Options.Validate accepts) well after it. The store is back 300 ms before
// the lease ends, so the renewal made at the cancel, or its retry on a
// short backoff, must keep the key this owner's.
func TestRenewalAfterCancelComesBeforeTheLeaseEnds(t *testing.T) {
	mem := idempotency.NewMemory()
	store := &renewOutageStore{Store: mem}
	var effects atomic.Int32
	winding := make(chan struct{}) // a was cancelled and the store is back
	finish := make(chan struct{})  // a's downstream call returns
	var cause atomic.Value
	a := idempotency.Wrap(&fnTool{name: "refund", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		effects.Add(1)
		store.down.Store(true) // the outage starts
		<-ctx.Done()           // cancelled 300ms before the lease ends
		cause.Store(context.Cause(ctx))
		store.down.Store(false) // the store is back, 300ms before the lease ends
		close(winding)
		<-finish
		return nil, context.Cause(ctx)
	}}, store, idempotency.Options{Lease: 3 * time.Second, RenewInterval: 2400 * time.Millisecond, StoreTimeout: 100 * time.Millisecond, WaitTimeout: -1})
	args := map[string]any{"order_id": "o-1", "amount_cents": 500}
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		_, _ = a.Run(toolCtx("inv-wind-late"), args)
	}()
	<-winding
	if c, _ := cause.Load().(error); !errors.Is(c, idempotency.ErrLeaseExpired) {
		close(finish)
		<-aDone
		t.Fatalf("setup: the tool was cancelled with %v, want ErrLeaseExpired", c)
	}

	// Another delivery of the same call waits past the first lease's end.
	b := idempotency.Wrap(&fnTool{name: "refund", fn: func(context.Context, map[string]any) (map[string]any, error) {
		effects.Add(1)
		return tool.OK(nil), nil
	}}, mem, idempotency.Options{Lease: 3 * time.Second, WaitTimeout: 5 * time.Second})
	_, bErr := b.Run(toolCtx("inv-wind-late"), args)
	ranTwice := effects.Load() // read while a still runs
	close(finish)
	<-aDone
	if ranTwice != 1 {
		t.Fatalf("the refund ran %d times for one (invocation, arguments): the store was back 300ms before the first owner's lease ended, "+
			"but the renewer waited for its next RenewInterval tick (after the lease end) to renew, and the second owner claimed the key while the first tool was still winding down; second run's error: %v", ranTwice, bErr)
	}
	if !errors.Is(bErr, idempotency.ErrInProgress) {
		t.Fatalf("second run: %v, want in progress (the first owner still holds the key)", bErr)
	}
}
