package natskv_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
)

// TestIndexOutlivesAReclaimedRecord: the package promises that "no
// record is ever missing from" the invocation's index (and Redis's index
// "outlives every record, in progress or not"). A key whose first claim was
// released and that is claimed again later is already listed, so Claim does
// not rewrite the index entry (touch false) and the index keeps its first
// write's age: it expires by the bucket's MaxAge while the new in-progress
// record (an effect whose outcome is unknown) is still stored and still
// answers claims, and Effects (dlq-replayer show) no longer lists it.
func TestIndexOutlivesAReclaimedRecord(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	const ret = 3 * time.Second
	s := newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: ret})
	kv, err := js.KeyValue(context.Background(), "IDEM")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key, inv := "idem:support:refund:0a1b", "inv-1"
	req := func(owner string) idempotency.ClaimRequest {
		return idempotency.ClaimRequest{Ticket: idempotency.Ticket{Key: key, InvocationID: inv, Owner: owner},
			Agent: "support", Tool: "refund", ArgsHash: "h", Lease: time.Hour}
	}
	// First claim: retryable result, released (the index keeps the key).
	if c, err := s.Claim(ctx, req("a")); err != nil || !c.Outcome.Owns() {
		t.Fatalf("claim a = %+v, %v", c, err)
	}
	if err := s.Release(ctx, req("a").Ticket); err != nil {
		t.Fatal(err)
	}
	idx, err := kv.Get(ctx, natskv.IndexKey(inv))
	if err != nil {
		t.Fatal(err)
	}
	// Let the index age by half the retention (polled, bounded).
	deadline := time.Now().Add(10 * time.Second)
	for time.Since(idx.Created()) < ret/2 {
		if time.Now().After(deadline) {
			t.Fatal("clock did not advance")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The call runs again (a replay) and its tool crashes after acting:
	// the record stays in progress, guarding the effect.
	if c, err := s.Claim(ctx, req("b")); err != nil || !c.Outcome.Owns() {
		t.Fatalf("claim b = %+v, %v", c, err)
	}
	// Poll until Effects stops listing the record; it must still be gone
	// from the store by then.
	deadline = time.Now().Add(15 * time.Second)
	for {
		recs, err := s.Effects(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("record never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e, err := kv.Get(ctx, natskv.KVKey(key)); err == nil {
		c, _ := s.Claim(ctx, req("c"))
		t.Fatalf("Effects(%s) lists nothing, but the in-progress record (rev %d, written %s ago) is still stored and answers claims with %s by %s",
			inv, e.Revision(), time.Since(e.Created()).Round(time.Millisecond), c.Outcome, c.Record.Owner)
	}
}

// Regression (found in review, sixteenth session): TestRenewKeepsTheIndexAlive: the package doc promises the index is
// "rewritten after [the record] so that it does not expire before the
// record (entries expire by the age of their last write)", and the Store
// contract that Effects lists every in-progress and completed record. Renew
// rewrites the record (restarting its MaxAge) but never touches the index,
// so the index of a claim that was renewed (a long tool, then a crash)
// expires before the in-progress record it must list. Redis's renewScript
// extends the index for the same reason (TestRenewKeepsTheIndexAlive).
func TestRenewKeepsTheIndexAlive(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	const ret = 3 * time.Second
	s := newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: ret})
	kv, err := js.KeyValue(context.Background(), "IDEM")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key, inv := "idem:support:export:0c0d", "inv-renew"
	tk := idempotency.Ticket{Key: key, InvocationID: inv, Owner: "a"}
	if c, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Agent: "support", Tool: "export", ArgsHash: "h", Lease: time.Hour}); err != nil || c.Outcome != idempotency.OutcomeAcquired {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	idx, err := kv.Get(ctx, natskv.IndexKey(inv))
	if err != nil {
		t.Fatal(err)
	}
	// The tool runs for half the retention (polled, bounded), renewing.
	deadline := time.Now().Add(10 * time.Second)
	for time.Since(idx.Created()) < ret/2 {
		if time.Now().After(deadline) {
			t.Fatal("clock did not advance")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := s.Renew(ctx, tk, time.Hour); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	// The worker then dies: the in-progress record stays, guarding the
	// effect. Poll until Effects stops listing it; it must be gone by then.
	deadline = time.Now().Add(15 * time.Second)
	for {
		recs, err := s.Effects(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("record never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e, err := kv.Get(ctx, natskv.KVKey(key)); err == nil {
		t.Fatalf("Effects(%s) lists nothing, but the renewed in-progress record (rev %d, written %s ago) is still stored and answers claims",
			inv, e.Revision(), time.Since(e.Created()).Round(time.Millisecond))
	}
}

// TestRenewNonPositiveLeaseRefused: Redis's Renew refuses a lease <= 0
// ("lease must be > 0", as ClaimRequest.Validate does for claims); the NATS
// KV store accepts it and writes a lease end in the past, so the owner is
// told its lease was extended while any other claimer reclaims the key at
// once: two owners.
func TestRenewNonPositiveLeaseRefused(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	s := newStore(t, js, natskv.Config{Bucket: "IDEM", Retention: time.Hour})
	ctx := context.Background()
	key, inv := "idem:support:refund:0e0f", "inv-neg"
	req := func(owner string) idempotency.ClaimRequest {
		return idempotency.ClaimRequest{Ticket: idempotency.Ticket{Key: key, InvocationID: inv, Owner: owner},
			Agent: "support", Tool: "refund", ArgsHash: "h", Lease: time.Hour}
	}
	if c, err := s.Claim(ctx, req("a")); err != nil || c.Outcome != idempotency.OutcomeAcquired {
		t.Fatalf("claim a = %+v, %v", c, err)
	}
	until, err := s.Renew(ctx, req("a").Ticket, -time.Second)
	if err != nil {
		return // refused, as Redis does
	}
	c, err := s.Claim(ctx, req("b"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Outcome.Owns() {
		t.Fatalf("Renew(lease -1s) by owner a = %s, nil; then Claim by b = %s: two owners of a live claim (Redis refuses the renewal)", until.Format(time.RFC3339Nano), c.Outcome)
	}
}
