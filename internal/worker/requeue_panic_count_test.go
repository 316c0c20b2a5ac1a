package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// leakingPanicLocker takes the lock, then panics for the "poison" session:
// a bug hit after the store took the lock and before handle installed its
// deferred release (e.g. decoding the session read in the same step). The
// lock stays held until its lease runs out.
type leakingPanicLocker struct{ session.Locker }

func (l leakingPanicLocker) Acquire(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	ls, err := l.Locker.Acquire(ctx, key, owner, lease)
	if err == nil && key.SessionID == "poison" {
		panic("session decode bug")
	}
	return ls, err
}

// Regression (found in review, twentieth session): a poison message whose
// panic leaves its session lock held finds its own
// session busy on the next deliveries. Before the requeue, those busy Naks
// kept the message's stream sequence, so afterPanic's per-sequence count
// reached MaxDeliveries and the message was dead-lettered. A requeue gives
// the message a new sequence and the count starts again at 1: the message
// is never dead-lettered and cycles for ever.
func TestRequeueKeepsPoisonPanicCount(t *testing.T) {
	e := newEnv(t)
	e.deps = func(d *worker.Deps) {
		d.Locker = leakingPanicLocker{d.Locker}
		d.Gate = nil
	}
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("hello")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, SessionLease: time.Second})
	e.publish(request("inv-poison-lock", "poison", "hi"), nil)
	deadline := time.After(15 * time.Second)
	for {
		select {
		case r := <-e.results:
			if r.InvocationID == "inv-poison-lock" {
				if r.Status != envelope.StatusDeadLettered {
					t.Fatalf("result = %+v, want dead_lettered", r)
				}
				return
			}
		case <-deadline:
			t.Fatalf("poison message not dead-lettered after 15s (MaxDeliveries 2, SessionLease 1s): requeued %v times, nak_busy %v; "+
				"each requeue gave it a new stream sequence and reset afterPanic's count",
				w.count("support", "requeued"), w.count("support", "nak_busy"))
		}
	}
}
