package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// panickingLocker panics taking a lock: a bug hit before the gate counts a
// run, so the run limit never sees it.
type panickingLocker struct{ session.Locker }

func (panickingLocker) Acquire(context.Context, session.Key, string, time.Duration) (*session.Lease, error) {
	panic("lock store bug at orders-db.internal:5432")
}

// TestPoisonMessageIsDeadLetteredAfterRepeatedPanics: a message the worker
// panics on before any run is counted went back for ever (found in review,
// seventeenth session). From its MaxDeliveries-th delivery a panic
// dead-letters it (UNKNOWN, the request kept, the panic's text sanitised),
// the producer gets a result, and the message is terminated.
func TestPoisonMessageIsDeadLetteredAfterRepeatedPanics(t *testing.T) {
	e := newEnv(t)
	e.deps = func(d *worker.Deps) {
		d.Locker = panickingLocker{d.Locker}
		d.Gate = nil // the sequential gate over the panicking locker
	}
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("hello")))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, InfraBackoffMax: time.Millisecond})
	e.publish(request("inv-poison", "s1", "hi"), nil)
	res := e.await("inv-poison")
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != "UNKNOWN" {
		t.Fatalf("result = %+v, want dead_lettered UNKNOWN", res)
	}
	en := e.dlqEntries()
	if len(en) != 1 {
		t.Fatalf("%d DLQ entries, want 1", len(en))
	}
	if r := en[0].Reason; !strings.Contains(r, "panicked") || !strings.Contains(r, "2 times") || strings.Contains(r, "orders-db.internal") {
		t.Errorf("reason %q: want the panic named, 2 times, its host redacted", r)
	}
	if req, err := envelope.DecodeRequest(en[0].OriginalRequest(), 0); err != nil || req.InvocationID != "inv-poison" {
		t.Errorf("the entry's request: %v, %v; want it kept for a replay", req, err)
	}
	eventually(t, "terminated", func() bool { return e.pending() == 0 })
}
