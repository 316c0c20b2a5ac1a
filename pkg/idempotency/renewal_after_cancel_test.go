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

// renewOutageStore is a store whose Renew fails as unreachable while down is
// set.
type renewOutageStore struct {
	idempotency.Store
	down atomic.Bool
}

func (s *renewOutageStore) Renew(ctx context.Context, t idempotency.Ticket, lease time.Duration) (time.Time, error) {
	if s.down.Load() {
		return time.Time{}, &idempotency.StoreError{Backend: "memory", Op: "renew", Err: errors.New("connection refused")}
	}
	return s.Store.Renew(ctx, t, lease)
}

// Regression (found in review, twenty-third session): the renewer stopped
// renewing for good when it cancelled the tool, so a store back before the
// lease's end did not keep the claim and a second owner ran the effect
// alongside the winding-down tool. Renewals fail (a store outage), so the
// wrapper cancels the tool shortly before its lease ends. The store is back
// at once, before the lease ends, but the tool is still winding down (its
// downstream call in flight), and the claim must hold until it returns: a
// second caller of the same (invocation, arguments) waiting past the first
// lease's end must find the key in progress, not reclaim it.
func TestClaimHeldWhileACancelledToolWindsDown(t *testing.T) {
	windDownAfterCancel(t, "inv-cancel-wind", 100*time.Millisecond,
		"the first owner's tool was still running (store reachable again) when its lease ran out unrenewed")
}

// windDownAfterCancel runs the scenario of the tests above and below: a
// tool (3 s lease, renewals every renewEvery) whose renewals fail is
// cancelled a margin before its lease ends; the store is back at once, and
// the tool winds down until a second caller of the same (invocation,
// arguments), waiting past the first lease's end, has its answer: it must
// find the key in progress, and the effect must have run once. why says
// what a double run means.
func windDownAfterCancel(t *testing.T, inv string, renewEvery time.Duration, why string) {
	t.Helper()
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
		store.down.Store(false) // the store is back before the lease ends
		close(winding)
		<-finish
		return nil, context.Cause(ctx)
	}}, store, idempotency.Options{Lease: 3 * time.Second, RenewInterval: renewEvery, StoreTimeout: 100 * time.Millisecond, WaitTimeout: -1})
	args := map[string]any{"order_id": "o-1", "amount_cents": 500}
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		_, _ = a.Run(toolCtx(inv), args)
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
	_, bErr := b.Run(toolCtx(inv), args)
	ranTwice := effects.Load() // read while a still runs
	close(finish)
	<-aDone
	if ranTwice != 1 {
		t.Fatalf("the refund ran %d times at once for one (invocation, arguments): %s; second run's error: %v", ranTwice, why, bErr)
	}
	if !errors.Is(bErr, idempotency.ErrInProgress) {
		t.Fatalf("second run: %v, want in progress (the first owner still holds the key)", bErr)
	}
}
