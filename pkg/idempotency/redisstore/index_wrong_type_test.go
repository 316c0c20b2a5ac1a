package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/redisstore"
)

// The scripts are "one round trip and atomic" (scripts.go). renewScript and
// completeExtendScript wrote the record first and only then touched the
// invocation's index (luaIndexTTL's SADD), which raises WRONGTYPE on an
// index key of another type: Redis kept the record write and the caller got
// a store error for a renewal or completion that happened. They now touch
// the index first. An error must mean nothing was written (the session scripts check key types before
// their first write for the same reason).
func reviewClaimThenBreakIndex(t *testing.T) (*redisstore.Store, idempotency.Ticket, string, func() string) {
	t.Helper()
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix, Retention: time.Hour})
	ctx := context.Background()
	tk := idempotency.Ticket{Key: "idem:support:refund_order:abc", InvocationID: "inv-1", Owner: "w/1"}
	cl, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Agent: "support", Tool: "refund_order", Lease: 5 * time.Second})
	if err != nil || cl.Outcome != idempotency.OutcomeAcquired {
		t.Fatalf("Claim = %+v, %v", cl, err)
	}
	ikey := prefix + redisstore.DefaultIndexPrefix + "inv-1"
	if err := c.Del(ctx, ikey).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, ikey, "x", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	rkey := prefix + tk.Key
	return s, tk, rkey, func() string { return c.Get(ctx, rkey).Val() }
}

func TestCompleteExtendOntoAWrongTypeIndexWritesNothing(t *testing.T) {
	s, tk, _, get := reviewClaimThenBreakIndex(t)
	// A retention above Config.Retention runs completeExtendScript.
	err := s.Complete(context.Background(), tk, []byte(`{"refund":"r-1"}`), 2*time.Hour)
	if rec := get(); err != nil && !strings.HasPrefix(rec, "in_progress\n") {
		t.Fatalf("Complete returned %v, yet the record was completed: %q", err, rec)
	}
}

func TestRenewOntoAWrongTypeIndexWritesNothing(t *testing.T) {
	s, tk, _, get := reviewClaimThenBreakIndex(t)
	before := strings.Split(get(), "\n")[4] // lease_until: the claim's now+5s; the renewal's is now+1m
	_, err := s.Renew(context.Background(), tk, time.Minute)
	after := strings.Split(get(), "\n")[4]
	if err != nil && after != before {
		t.Fatalf("Renew returned %v, yet the record's lease was extended (lease_until %s -> %s)", err, before, after)
	}
}

// Claim's pipeline sends SADD on the index before the SET NX GET that is
// the claim: with an index of another type the SADD fails, Pipelined
// returns its error, and Claim reported a store error although the SET NX
// claimed the key for this owner (nobody would complete or release it): it
// now gives the claim back before it reports the error.
func TestClaimOntoAWrongTypeIndexClaimsNothing(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := redisstore.New(c, redisstore.Config{Prefix: prefix})
	ctx := context.Background()
	if err := c.Set(ctx, prefix+redisstore.DefaultIndexPrefix+"inv-2", "x", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	tk := idempotency.Ticket{Key: "idem:support:refund_order:def", InvocationID: "inv-2", Owner: "w/2"}
	_, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Agent: "support", Tool: "refund_order", Lease: 5 * time.Second})
	if rec := c.Get(ctx, prefix+tk.Key).Val(); err != nil && rec != "" {
		t.Fatalf("Claim returned %v, yet the key is claimed: %q", err, rec)
	}
}
