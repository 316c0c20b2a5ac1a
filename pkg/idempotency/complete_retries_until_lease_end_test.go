package idempotency_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// completeOutageStore is a store whose Complete fails as unreachable while
// down is set (a Redis restart, a failover): every failed Complete is
// counted, and after upAfter failures the outage ends by itself (the store
// is back).
type completeOutageStore struct {
	idempotency.Store
	down     atomic.Bool
	failures atomic.Int32
	upAfter  int32
}

func (s *completeOutageStore) Complete(ctx context.Context, t idempotency.Ticket, res json.RawMessage, retention time.Duration) error {
	if s.down.Load() {
		if s.failures.Add(1) >= s.upAfter {
			s.down.Store(false) // back for the next call
		}
		return &idempotency.StoreError{Backend: "memory", Op: "complete", Err: context.DeadlineExceeded}
	}
	return s.Store.Complete(ctx, t, res, retention)
}

// Regression (found in review, twenty-third session): Complete gave up on
// an unreachable store after max(WaitTimeout, StoreTimeout) (10 s of a
// 30 s lease by default) while the claim's lease still ran, so a
// redelivery after the lease ran the effect again. The tool did its effect,
// then the store was briefly unreachable (here for longer than
// max(WaitTimeout, StoreTimeout), 100ms). The claim is still this owner's
// and its lease has seconds to run, so the result must be stored once the
// store is back: the next call of the same (invocation, arguments), e.g.
// the redelivery of a message whose session append failed in the same
// outage, waits past the lease's end and must replay it, not run the
// effect a second time.
func TestCompleteRetriesAnOutageUntilTheLeaseEnds(t *testing.T) {
	mem := idempotency.NewMemory()
	store := &completeOutageStore{Store: mem, upAfter: 8}
	var effects atomic.Int32
	refund := func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		effects.Add(1)
		store.down.Store(true) // the outage starts once the refund was sent
		return tool.OK(map[string]any{"refund_id": "r-1"}), nil
	}
	opts := idempotency.Options{Lease: 5 * time.Second, RenewInterval: time.Second, WaitTimeout: 100 * time.Millisecond, StoreTimeout: 50 * time.Millisecond}
	a := idempotency.Wrap(&fnTool{name: "refund", fn: refund}, store, opts)
	args := map[string]any{"order_id": "o-1", "amount_cents": 500}
	if _, err := a.Run(toolCtx("inv-complete-outage"), args); err != nil {
		t.Fatalf("first run: %v", err)
	}
	// The first call has returned: from here on the store answers (the
	// outage is over whether or not the wrapper saw it end).
	store.down.Store(false)

	// The same call again (a redelivery), waiting long enough for the
	// first claim's lease to end.
	opts.WaitTimeout = 15 * time.Second
	b := idempotency.Wrap(&fnTool{name: "refund", fn: refund}, mem, opts)
	if _, err := b.Run(toolCtx("inv-complete-outage"), args); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if n := effects.Load(); n != 1 {
		recs, _ := mem.Effects(context.Background(), "inv-complete-outage")
		t.Fatalf("the refund ran %d times for one (invocation, arguments); the first Complete failed %d times and was abandoned while the claim was still held (records %+v)",
			n, store.failures.Load(), recs)
	}
}
