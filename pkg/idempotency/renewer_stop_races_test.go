package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// stopRaceFlakyRenew makes Renew slow and sometimes unreachable.
type stopRaceFlakyRenew struct{ idempotency.Store }

func (s stopRaceFlakyRenew) Renew(ctx context.Context, t idempotency.Ticket, lease time.Duration) (time.Time, error) {
	time.Sleep(time.Duration(rand.IntN(8)) * time.Millisecond)
	if rand.IntN(2) == 0 {
		return time.Time{}, &idempotency.StoreError{Backend: "memory", Op: "renew", Err: errors.New("connection refused")}
	}
	return s.Store.Renew(ctx, t, lease)
}

// Stops racing renewals (in flight, failing, retrying after a cancel) in
// many calls at once: no data race (-race), no goroutine or timer left, and
// every call completes its key.
func TestStopRacingRenewalsLeavesNothingBehind(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	mem := idempotency.NewMemory()
	w := idempotency.Wrap(&fnTool{name: "refund", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		select {
		case <-ctx.Done():
			time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond) // winds down
		case <-time.After(time.Duration(rand.IntN(150)) * time.Millisecond):
		}
		return tool.OK(nil), nil
	}}, stopRaceFlakyRenew{mem}, idempotency.Options{Lease: 100 * time.Millisecond, RenewInterval: 30 * time.Millisecond, StoreTimeout: 20 * time.Millisecond, WaitTimeout: -1})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = w.Run(toolCtx(fmt.Sprintf("inv-sr-race-%d", i)), map[string]any{"order_id": "o"})
		}()
	}
	wg.Wait()
	for i := range 200 {
		recs, err := mem.Effects(context.Background(), fmt.Sprintf("inv-sr-race-%d", i))
		if err != nil || len(recs) != 1 || recs[0].State != idempotency.StateCompleted {
			t.Fatalf("inv %d: records %+v, %v: want one completed", i, recs, err)
		}
	}
}

// stopRaceFastFail fails every Renew at once.
type stopRaceFastFail struct{ idempotency.Store }

func (s stopRaceFastFail) Renew(context.Context, idempotency.Ticket, time.Duration) (time.Time, error) {
	return time.Time{}, &idempotency.StoreError{Backend: "memory", Op: "renew", Err: errors.New("connection refused")}
}

// Renewals that fail at once never hold the cancel back.
func TestFastFailingRenewalsStillCancelTheTool(t *testing.T) {
	var cause error
	w := idempotency.Wrap(&fnTool{name: "refund", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(5 * time.Second):
		}
		return tool.OK(nil), nil
	}}, stopRaceFastFail{idempotency.NewMemory()}, idempotency.Options{Lease: 500 * time.Millisecond, RenewInterval: 10 * time.Millisecond, StoreTimeout: 20 * time.Millisecond, WaitTimeout: -1})
	_, _ = w.Run(toolCtx("inv-sr-fast"), map[string]any{"order_id": "o"})
	if !errors.Is(cause, idempotency.ErrLeaseExpired) {
		t.Fatalf("tool's cause %v, want ErrLeaseExpired", cause)
	}
}
