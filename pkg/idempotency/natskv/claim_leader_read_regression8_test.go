package natskv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// laggingReplicaKV answers Get for the keys in behind as a replica of an R3
// bucket that has not applied the latest writes yet: not found. Writes and
// everything else go to the real bucket (the stream's leader decides them).
type laggingReplicaKV struct {
	jetstream.KeyValue
	behind map[string]bool
}

func (k laggingReplicaKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if k.behind[key] {
		return nil, jetstream.ErrKeyNotFound
	}
	return k.KeyValue.Get(ctx, key)
}

// Regression (found in review of this session's fix, twenty-fifth
// session): the index update reads the invocation's index through the
// leader after a revision conflict, because a direct get answered by a
// lagging replica conflicts again on every try (this test covers it too:
// the index key lags as well). Claim's own loop over the record
// has the same shape and still re-reads with a direct get (natskv.go Claim,
// s.get after `continue`): a worker whose server's replica has not applied
// another worker's claim of the same key reads "absent" on every try, each
// Create is refused, and after maxConflicts tries the claim fails with the
// *StoreError "too many revision conflicts" (the worker puts the message
// back for a store outage) instead of answering in progress with the live
// owner. Right: after a conflict the record is read through the leader too
// (kvbucket.LeaderGet, as updateIndex now does).
func TestClaimConflictReadsTheRecordThroughTheLeader(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx := context.Background()
	real, err := New(ctx, js, Config{Bucket: "IDEM_REVIEW8D_STALE", Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	key, inv := "idem:support:refund:0a1b", "inv-review8d"
	req := func(owner string) idempotency.ClaimRequest {
		return idempotency.ClaimRequest{Ticket: idempotency.Ticket{Key: key, InvocationID: inv, Owner: owner},
			Agent: "support", Tool: "refund", ArgsHash: "h", Lease: time.Minute}
	}
	if c, err := real.Claim(ctx, req("owner-a")); err != nil || c.Outcome != idempotency.OutcomeAcquired {
		t.Fatalf("first claim: %+v, %v", c, err)
	}
	// The second worker reads from a replica that has applied neither the
	// record nor the index write of owner-a's claim.
	lagging := &Store{kv: laggingReplicaKV{KeyValue: real.kv, behind: map[string]bool{KVKey(key): true, IndexKey(inv): true}}, js: js, cfg: real.cfg}
	c, err := lagging.Claim(ctx, req("owner-b"))
	var se *idempotency.StoreError
	if errors.As(err, &se) {
		t.Fatalf("claim of a key another owner holds, read from a lagging replica: %v; want in progress (owner-a), as the index read after a conflict already gets", err)
	}
	if err != nil || c.Outcome != idempotency.OutcomeInProgress || c.Record.Owner != "owner-a" {
		t.Fatalf("claim: %+v, %v; want in progress by owner-a", c, err)
	}
}
