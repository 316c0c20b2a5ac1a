package natssession_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
)

// TestRenewByLiveHolderOnR3: on an R3 lock bucket the holder of a live
// lease can renew and release it (session.Locker; ErrNotOwner means the
// lock was lost). A plain KV Get is a direct get that a lagging replica may
// answer with "not held" right after the holder's own Acquire; Renew and
// Release confirm such an answer with the leader (kvbucket.LeaderGet)
// before they return ErrNotOwner. Without that, KeepAlive reported the lock
// lost and the worker stopped a healthy invocation, and a Release that said
// ErrNotOwner left the session busy for the lease.
func TestRenewByLiveHolderOnR3(t *testing.T) {
	servers := natstest.RunCluster(t, 3)
	cfg := natssession.Config{Replicas: 3, LockBucket: "locks_r3_fence"}
	jss := natstest.JetStreamPerServer(t, servers)
	natstest.Retry(t, time.Minute, func(ctx context.Context) error {
		_, err := natssession.NewLocker(ctx, jss[0], cfg)
		return err
	})
	var lockers []*natssession.Locker
	for _, js := range jss {
		l, err := natssession.NewLocker(ctx, js, cfg)
		if err != nil {
			t.Fatal(err)
		}
		lockers = append(lockers, l)
	}
	var once sync.Once
	var bad error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second) // before the fix, a stale read came within 3-9 s
	for g := range 6 {
		wg.Go(func() {
			l := lockers[g%len(lockers)]
			for i := 0; time.Now().Before(deadline); i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := session.Key{App: "support", UserID: "u1", SessionID: fmt.Sprintf("s-%d-%d", g, i)}
				owner := fmt.Sprintf("w%d/%d", g, i)
				if _, err := l.Acquire(ctx, k, owner, 30*time.Second); err != nil {
					continue
				}
				if _, err := l.Renew(ctx, k, owner, 30*time.Second); errors.Is(err, session.ErrNotOwner) {
					once.Do(func() { bad = fmt.Errorf("Renew: %w", err); close(stop) })
					return
				}
				if err := l.Release(ctx, k, owner); errors.Is(err, session.ErrNotOwner) {
					once.Do(func() { bad = fmt.Errorf("Release: %w", err); close(stop) })
					return
				}
			}
		})
	}
	wg.Wait()
	if bad != nil {
		t.Fatalf("the holder of a live 30s lease, right after Acquire, was told it does not own the lock: %v", bad)
	}
}
