package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// lostAcquireReplyLocker takes the lock in the store and then reports a
// failure on its first Acquire, as a Redis reply lost after SET NX ran.
type lostAcquireReplyLocker struct {
	session.Locker
	lost atomic.Bool
}

func (l *lostAcquireReplyLocker) Acquire(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	le, err := l.Locker.Acquire(ctx, key, owner, lease)
	if err == nil && l.lost.CompareAndSwap(false, true) {
		return nil, errors.New("test: reply lost (the lock was taken)")
	}
	return le, err
}

// Regression (found in review of this session's fix, twenty-fourth session):
// handle gives back a lock whose Acquire reply was lost (fenced
// by its own owner token); unknownAgent does not. A worker WITHOUT the
// agent then holds the real owner's session for the whole SessionLease
// (30 s by default): every message of the session on the agent's workers is
// put back as busy meanwhile.
func TestUnknownAgentReleasesTheLockAfterALostAcquireReply(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	lk := &lostAcquireReplyLocker{Locker: e.locker}
	e.deps = func(d *worker.Deps) { d.Locker = lk }
	req := request("inv-7d-lock", "s-7d-lock", "refund my order")
	key := session.Key{App: "support", UserID: req.UserID, SessionID: req.SessionID}
	// A crashed run: the record says running, nobody holds the session.
	if err := e.invs.Transition(ctx, &session.Invocation{ID: req.InvocationID, Status: session.InvocationRunning, Session: key}); err != nil {
		t.Fatal(err)
	}
	w2 := e.noAgentWorker("w2", 100)
	e.publish(req, nil)
	eventually(t, "the worker without the agent put it back (acquire failed)", func() bool { return w2.count("_unknown", "nak_infra") >= 1 })
	w2.shutdown(t)
	_, err := e.locker.Acquire(ctx, key, "the-agents-worker", time.Second)
	t.Logf("lost reply: %v; the agent's worker acquiring the session after w2 handled and stopped: %v", lk.lost.Load(), err)
	if errors.Is(err, session.ErrLocked) {
		t.Errorf("the session stays locked by a worker that does not run its agent (until its SessionLease ends): %v", err)
	}
}
