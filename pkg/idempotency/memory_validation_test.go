package idempotency

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// Regression (found in review, sixteenth session): TestMemoryRenewNonPositiveLeaseRefused: redisstore.Renew refuses a
// lease <= 0 ("lease must be > 0", as ClaimRequest.Validate does for
// claims). Memory accepts it and sets the lease end to now (or earlier): the
// owner is told its lease was extended, and another claimer reclaims the key
// at the same instant.
func TestMemoryRenewNonPositiveLeaseRefused(t *testing.T) {
	m := NewMemory()
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return t0 }
	ctx := context.Background()
	req := func(owner string) ClaimRequest {
		return ClaimRequest{Ticket: Ticket{Key: "idem:support:refund:1", InvocationID: "inv-1", Owner: owner},
			Agent: "support", Tool: "refund", Lease: 10 * time.Second}
	}
	if c, err := m.Claim(ctx, req("a")); err != nil || c.Outcome != OutcomeAcquired {
		t.Fatalf("claim a = %+v, %v", c, err)
	}
	until, err := m.Renew(ctx, req("a").Ticket, 0)
	if err != nil {
		return // refused, as Redis does
	}
	c, err := m.Claim(ctx, req("b"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Outcome.Owns() {
		t.Fatalf("Renew(lease 0) by owner a = %s, nil; then Claim by b at the same instant = %s: two owners (Redis refuses the renewal)", until.Format(time.RFC3339), c.Outcome)
	}
}

// TestMemoryCompleteRefusesInvalidJSON: Complete "stores result
// (JSON)"; redisstore.Complete refuses a result that is not valid JSON and
// natskv cannot encode it, so nothing is written. Memory stores it and a
// later claim replays bytes that are not JSON.
func TestMemoryCompleteRefusesInvalidJSON(t *testing.T) {
	m := NewMemory()
	ctx := context.Background()
	tk := Ticket{Key: "idem:support:refund:2", InvocationID: "inv-2", Owner: "a"}
	if c, err := m.Claim(ctx, ClaimRequest{Ticket: tk, Lease: 10 * time.Second}); err != nil || c.Outcome != OutcomeAcquired {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	if err := m.Complete(ctx, tk, json.RawMessage(`{"refund_id":`), time.Hour); err != nil {
		return // refused, as the Redis and NATS KV stores do
	}
	c, err := m.Claim(ctx, ClaimRequest{Ticket: Ticket{Key: tk.Key, InvocationID: tk.InvocationID, Owner: "b"}, Lease: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c.Outcome == OutcomeCompleted && !json.Valid(c.Record.Result) {
		t.Fatalf("Complete accepted a result that is not JSON; a claim now replays %q (Redis and NATS KV refuse it)", c.Record.Result)
	}
}
