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

// TestCompleteByLiveOwnerOnR3: on a replicated (R3) bucket, the owner of
// a live claim can complete it (DESIGN.md: "a final result is stored"). A
// plain KV Get is a direct get (nats.go creates buckets with AllowDirect)
// that a replica may answer before it applied the claim; Complete's fence
// confirms "claim lost" or "held by another" with the leader
// (kvbucket.LeaderGet). Without that, the wrapper took the ownership error
// as final and left the record in progress, and once the lease ended
// another owner reclaimed the key: the effect ran a second time.
func TestCompleteByLiveOwnerOnR3(t *testing.T) {
	servers := natstest.RunCluster(t, 3)
	cfg := natskv.Config{Bucket: "IDEM_R3_FENCE", Retention: time.Hour, Replicas: 3}
	jss := natstest.JetStreamPerServer(t, servers)
	natstest.Retry(t, time.Minute, func(ctx context.Context) error {
		_, err := natskv.New(ctx, jss[0], cfg)
		return err
	})
	var stores []*natskv.Store
	for _, js := range jss {
		// Each server's own open retried as the first one is: a
		// cluster's API answer can take longer than the JetStream
		// default of 5 s on a loaded machine (it failed once so).
		var s *natskv.Store
		natstest.Retry(t, time.Minute, func(ctx context.Context) (err error) {
			s, err = natskv.New(ctx, js, cfg)
			return err
		})
		stores = append(stores, s)
	}
	ctx := context.Background()
	const lease = time.Second
	type refused struct {
		store int
		tk    idempotency.Ticket
		err   error
	}
	found := make(chan refused, 1)
	stop := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second) // before the fix, a stale read came within 3-9 s
	for g := range 6 {
		wg.Go(func() {
			w := stores[g%len(stores)]
			for i := 0; time.Now().Before(deadline); i++ {
				select {
				case <-stop:
					return
				default:
				}
				tk := idempotency.Ticket{Key: fmt.Sprintf("idem:support:refund_order:g%d-%d", g, i), InvocationID: fmt.Sprintf("inv-%d-%d", g, i), Owner: "owner-a"}
				c, err := w.Claim(ctx, idempotency.ClaimRequest{Ticket: tk, Agent: "support", Tool: "refund_order", ArgsHash: "h", Lease: lease})
				if err != nil || !c.Outcome.Owns() {
					continue // a store error is not what this test is about
				}
				// The refund ran; store its result at once, well within the lease.
				if err := w.Complete(ctx, tk, []byte(`{"refund_id":"R-1"}`), time.Hour); idempotency.IsOwnershipError(err) {
					once.Do(func() { found <- refused{g % len(stores), tk, err}; close(stop) })
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case r := <-found:
		// What the wrapper does next: nothing (claim lost). Another worker
		// claims the key once the lease has ended.
		s := stores[(r.store+1)%len(stores)]
		until := time.Now().Add(10 * lease)
		for {
			c, err := s.Claim(ctx, idempotency.ClaimRequest{Ticket: idempotency.Ticket{Key: r.tk.Key, InvocationID: r.tk.InvocationID, Owner: "owner-b"}, Agent: "support", Tool: "refund_order", ArgsHash: "h", Lease: lease})
			if err == nil && c.Outcome != idempotency.OutcomeInProgress {
				t.Fatalf("Complete by the live owner %s of %s was refused (%v); the record stayed in progress and a later claim got %s: the refund runs twice",
					r.tk.Owner, r.tk.Key, r.err, c.Outcome)
			}
			if time.Now().After(until) {
				t.Fatalf("Complete by the live owner of %s was refused (%v); last claim %+v, %v", r.tk.Key, r.err, c, err)
			}
			time.Sleep(50 * time.Millisecond) // polling the store for the lease to end (bounded above)
		}
	default:
	}
}
