package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// slowReplyStore is a store whose Claim answer arrives late (a slow network
// or a loaded server): the lease starts at the store, the wrapper hears of it
// delay later, so as the wrapper sees it the lease has delay less to run
// (simulated by moving the answer's lease end back, not by sleeping). Every
// Renew is reported on renewCalls.
type slowReplyStore struct {
	idempotency.Store
	delay      time.Duration
	renewCalls chan struct{}
}

func (s slowReplyStore) Claim(ctx context.Context, req idempotency.ClaimRequest) (idempotency.Claim, error) {
	c, err := s.Store.Claim(ctx, req)
	c.Record.LeaseUntil = c.Record.LeaseUntil.Add(-s.delay) // the reply was delay on its way
	return c, err
}

func (s slowReplyStore) Renew(ctx context.Context, tk idempotency.Ticket, lease time.Duration) (time.Time, error) {
	select {
	case s.renewCalls <- struct{}{}:
	default:
	}
	return s.Store.Renew(ctx, tk, lease)
}

// Regression (found in review, nineteenth session): a renew interval that
// Options.Validate accepts (shorter than the lease less the cancel margin)
// must get a renewal in before the cancel. But the renewer measures the
// interval from the moment the claim's answer arrives while the lease started
// at the store: when what is left of the lease less the margin is shorter
// than RenewInterval (a claim answered 150ms late here), startRenewer starts
// its loop at the cancel time with renewFirst false, and the expire timer
// cancels the tool at once with ErrLeaseExpired ("no renewal succeeded")
// although no renewal was ever attempted and the store is healthy. The
// wrapper then stores outcome_unknown for a tool that was working fine.
// Correct: when the cancel would come before the first renewal, renew
// first (at once), and cancel only if that renewal fails to land in time.
func TestRenewerTriesARenewalBeforeCancelling(t *testing.T) {
	s := slowReplyStore{Store: idempotency.NewMemory(), delay: 150 * time.Millisecond, renewCalls: make(chan struct{}, 1)}
	tl := &fnTool{name: "provision", fn: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		select {
		case <-s.renewCalls: // the lease is being kept: the tool finishes
			return tool.OK(map[string]any{"vm": "vm-1"}), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}}
	// Lease 1s: cancel margin 100ms, so any renew interval under 900ms is
	// valid; 800ms is.
	w, err := idempotency.NewTool(tl, s, idempotency.Options{Lease: time.Second, RenewInterval: 800 * time.Millisecond})
	if err != nil {
		t.Fatalf("options refused: %v", err)
	}
	_, err = w.Run(toolCtx("inv-renew-first"), map[string]any{"size": "small"})
	if errors.Is(err, idempotency.ErrLeaseExpired) {
		t.Fatalf("the tool was cancelled with %v before any renewal was tried (the store is healthy)", err)
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
}
