package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// flappingRenewStore fails Renew as unreachable while down is set and counts
// every failure; after the tool was cancelled (cancelled set), the lease
// end of each successful Renew is sent on granted.
type flappingRenewStore struct {
	idempotency.Store
	down      atomic.Bool
	cancelled atomic.Bool
	fails     atomic.Int32
	granted   chan time.Time
}

func (s *flappingRenewStore) Renew(ctx context.Context, t idempotency.Ticket, lease time.Duration) (time.Time, error) {
	if s.down.Load() {
		s.fails.Add(1)
		return time.Time{}, &idempotency.StoreError{Backend: "memory", Op: "renew", Err: errors.New("connection refused")}
	}
	until, err := s.Store.Renew(ctx, t, lease)
	if err == nil && s.cancelled.Load() {
		select {
		case s.granted <- until:
		default:
		}
	}
	return until, err
}

// Lease 1 s, RenewInterval 300 ms: the cancel margin is 100 ms, the
// after-cancel retry backoff max(min(300ms, 25ms), 5ms) = 25 ms.
var boundedRenewOpts = idempotency.Options{Lease: time.Second, RenewInterval: 300 * time.Millisecond, StoreTimeout: 100 * time.Millisecond, WaitTimeout: -1}

// A store down for the whole lease (and after it) while the tool runs and
// winds down: the renewals are bounded (the ticker's, plus the short
// retries in the cancel margin), and nothing the renewer started outlives
// the call.
func TestStoreDownForTheWholeLeaseRenewalsBoundedNoLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	store := &flappingRenewStore{Store: idempotency.NewMemory(), granted: make(chan time.Time, 1)}
	var runs atomic.Int32
	a := idempotency.Wrap(&fnTool{name: "refund", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		runs.Add(1)
		store.down.Store(true)
		<-ctx.Done()
		// Winds down for another lease, the store still down.
		time.Sleep(time.Second)
		return nil, context.Cause(ctx)
	}}, store, boundedRenewOpts)
	_, err := a.Run(toolCtx("inv-rb-down"), map[string]any{"order_id": "o-1"})
	if err == nil {
		t.Fatal("run: nil error, want the cancelled tool's")
	}
	// ~2 s of outage: ticks every 300 ms (~6) plus the cancel-margin
	// retries (100 ms / 25 ms, ~4) and the renewal at the cancel.
	if n := store.fails.Load(); n > 16 {
		t.Fatalf("%d renewals in ~2 s of outage (1 s lease, 300 ms interval): not bounded by the ticker and the cancel margin", n)
	}
}

// Regression (found in review of this session's fix, twenty-third
// session): the short retries after the cancel ran for a whole lease.
// After the cancel, one renewal succeeds (the store is back briefly), so
// the ticker is in time again (renewed: "the ticker is in time again"), and
// then the store is down for the whole granted lease. The short retries are
// there only because the next tick may come after the lease's end; yet
// every tick's failure re-arms the 25 ms retry while the granted lease
// lasts, so a store down for the whole lease is renewed every backoff for
// the whole lease (~35 renewals a 1 s lease, ~60 a default 30 s one, where
// the ticker makes 3), for as long as the cancelled tool winds down and the
// store flaps.
func TestRenewRetriesAfterACancelledToolsRenewalSucceededAreBounded(t *testing.T) {
	store := &flappingRenewStore{Store: idempotency.NewMemory(), granted: make(chan time.Time, 1)}
	counted := make(chan int32, 1)
	a := idempotency.Wrap(&fnTool{name: "refund", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		store.down.Store(true) // the outage starts
		<-ctx.Done()           // cancelled 100 ms before the lease ends
		store.cancelled.Store(true)
		store.down.Store(false) // back: the renewal at the cancel, or a retry, lands
		until := <-store.granted
		store.fails.Store(0)
		store.down.Store(true) // down again, for the whole granted lease
		time.Sleep(time.Until(until))
		counted <- store.fails.Load()
		return tool.OK(nil), nil
	}}, store, boundedRenewOpts)
	if _, err := a.Run(toolCtx("inv-rb-flap"), map[string]any{"order_id": "o-1"}); err != nil {
		t.Fatalf("run: %v", err)
	}
	// The ticker (~3 ticks in a 1 s lease), plus short retries only where
	// no tick is left before the lease's end (the last 300 ms: ~12), and
	// slack; today ~40 (the whole lease on the 25 ms backoff).
	if n := <-counted; n > 20 {
		t.Fatalf("%d renewals during one 1 s lease of outage after a successful renewal of the cancelled tool's claim (interval 300 ms): "+
			"each tick's failure re-arms the 25 ms retry for the whole granted lease, though the ticker is in time", n)
	}
}
