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

// TestR3AcquireAfterReleaseIsLockedNotError: on a replicated (R3)
// lock bucket, contenders racing for a lock that was just released (its key
// holds a delete marker) must each get the lock or a *LockedError, as on R1
// and on Redis. nats.go's Create re-tries a deleted key with an Update whose
// wrong-last-sequence error on R>1 streams is code 10164, which isConflict
// (ErrKeyRevisionMismatch / ErrKeyExists, code 10071) does not recognise, so
// the loser gets a hard error ("infrastructure down" to the worker).
func TestR3AcquireAfterReleaseIsLockedNotError(t *testing.T) {
	js, _ := natstest.ClusterJetStream(t, 3)
	var l *natssession.Locker
	natstest.Retry(t, time.Minute, func(ctx context.Context) error {
		var err error
		l, err = natssession.NewLocker(ctx, js, natssession.Config{Replicas: 3})
		return err
	})
	ctx := context.Background()
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	natstest.Retry(t, time.Minute, func(ctx context.Context) error {
		_, err := l.Acquire(ctx, k, "warmup", time.Minute)
		return err
	})
	if err := l.Release(ctx, k, "warmup"); err != nil {
		t.Fatal(err)
	}
	const rounds, n = 20, 8
	for r := range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []string
		var bad []error
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				owner := fmt.Sprintf("r%d-o%d", r, i)
				<-start
				_, err := l.Acquire(ctx, k, owner, time.Minute)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, owner)
				case !errors.Is(err, session.ErrLocked):
					bad = append(bad, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(bad) > 0 {
			t.Fatalf("round %d: %d contender(s) for a released lock got an error that is neither the lock nor ErrLocked, e.g. %v", r, len(bad), bad[0])
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: winners %v", r, winners)
		}
		if err := l.Release(ctx, k, winners[0]); err != nil {
			t.Fatal(err)
		}
	}
}
