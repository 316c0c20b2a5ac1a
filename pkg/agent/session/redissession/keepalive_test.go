package redissession_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
)

// TestKeepAliveOnRedis runs the background renewer against Redis: it holds
// the lock across many lease periods, Stop ends its goroutine, and the lock
// is free once released.
func TestKeepAliveOnRedis(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	l, err := redissession.NewLocker(rdb, redissession.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// A 2 s lease renewed every 100 ms, watched for two lease periods: a
	// 1 s lease failed once on a machine loaded by several test suites and
	// a chaos soak at once, where no renewal answered within the lease.
	lease, err := l.Acquire(ctx, k, "worker-1/delivery-1", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := session.KeepAlive(ctx, l, lease, 100*time.Millisecond)
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, err := l.Acquire(ctx, k, "worker-2/delivery-1", time.Second); !errors.Is(err, session.ErrLocked) {
			t.Fatalf("second worker Acquire = %v, want ErrLocked", err)
		}
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, k, "worker-1/delivery-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, k, "worker-2/delivery-1", time.Second); err != nil {
		t.Fatal(err)
	}
}
