package natskv_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
)

// TestR3ClaimAfterReleaseIsInProgressNotStoreError: on a replicated
// (R3) bucket, concurrent claims of a key whose claim was just released (the
// key holds a delete marker) must give one owner and in-progress answers, as
// on R1 and Redis. Claim checks only jetstream.ErrKeyExists after Create,
// but nats.go's Create re-tries a deleted key with an Update whose conflict
// on R>1 streams is code 10164: the losers fail closed with a *StoreError.
func TestR3ClaimAfterReleaseIsInProgressNotStoreError(t *testing.T) {
	js, _ := natstest.ClusterJetStream(t, 3)
	var s *natskv.Store
	natstest.Retry(t, time.Minute, func(ctx context.Context) error {
		var err error
		s, err = natskv.New(ctx, js, natskv.Config{Bucket: "IDEM_R3", Retention: time.Hour, Replicas: 3})
		return err
	})
	ctx := context.Background()
	key, inv := "idem:support:refund:0a1b", "inv-1"
	req := func(owner string) idempotency.ClaimRequest {
		return idempotency.ClaimRequest{Ticket: idempotency.Ticket{Key: key, InvocationID: inv, Owner: owner},
			Agent: "support", Tool: "refund", ArgsHash: "h", Lease: time.Minute}
	}
	natstest.Retry(t, time.Minute, func(ctx context.Context) error {
		_, err := s.Claim(ctx, req("warmup"))
		return err
	})
	if err := s.Release(ctx, req("warmup").Ticket); err != nil {
		t.Fatal(err)
	}
	const rounds, n = 20, 8
	for r := range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var owners []string
		var bad []error
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				owner := fmt.Sprintf("r%d-o%d", r, i)
				<-start
				c, err := s.Claim(ctx, req(owner))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					bad = append(bad, err)
				case c.Outcome.Owns():
					owners = append(owners, owner)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(bad) > 0 {
			t.Fatalf("round %d: %d concurrent claim(s) of a released key failed instead of answering in progress, e.g. %v", r, len(bad), bad[0])
		}
		if len(owners) != 1 {
			t.Fatalf("round %d: owners %v", r, owners)
		}
		if err := s.Release(ctx, req(owners[0]).Ticket); err != nil {
			t.Fatal(err)
		}
	}
}
