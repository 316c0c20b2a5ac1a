package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// resendingStore answers each Claim as a client that resends a command
// whose reply was lost does: the first Claim is applied, its answer lost,
// and the resend's answer is what the caller gets.
type resendingStore struct{ idempotency.Store }

func (s resendingStore) Claim(ctx context.Context, req idempotency.ClaimRequest) (idempotency.Claim, error) {
	if _, err := s.Store.Claim(ctx, req); err != nil {
		return idempotency.Claim{}, err
	}
	return s.Store.Claim(ctx, req)
}

// Regression (found in review, twenty-fifth session): with Redis client
// retries on (redis.url max_retries > 0), a claim whose reply was lost is
// sent again and finds the key in progress by its own, freshly drawn owner
// token. The wrapper took that for another owner: it waited WaitTimeout on
// itself and failed with an InProgressError naming its own token, and every
// redelivery then waited out the orphaned lease. An in-progress answer
// whose owner is this call's token is this call's claim: the tool runs,
// once.
func TestClaimAnsweredWithItsOwnTokenIsAcquired(t *testing.T) {
	store := resendingStore{idempotency.NewMemory()}
	runs := 0
	refund := func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		runs++
		return tool.OK(map[string]any{"refund_id": "r-1"}), nil
	}
	opts := idempotency.Options{Lease: 5 * time.Second, WaitTimeout: 200 * time.Millisecond}
	a := idempotency.Wrap(&fnTool{name: "refund", fn: refund}, store, opts)
	res, err := a.Run(toolCtx("inv-own-claim"), map[string]any{"order_id": "o-1"})
	if err != nil {
		t.Fatalf("a claim whose resend found its own token: %v; want the tool run", err)
	}
	if runs != 1 || res["refund_id"] != "r-1" {
		t.Fatalf("runs = %d, result %v; want one run and its result", runs, res)
	}
	// The effect is recorded: a later call of the same arguments replays it.
	if _, err := a.Run(toolCtx("inv-own-claim"), map[string]any{"order_id": "o-1"}); err != nil || runs != 1 {
		t.Fatalf("second call: runs = %d, err %v; want the stored result replayed", runs, err)
	}
}
