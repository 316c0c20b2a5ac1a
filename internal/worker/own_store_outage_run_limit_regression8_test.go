package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review, twenty-fifth session): a run that the
// idempotency layer ended because it could not answer (its store
// unavailable, or a claim in progress elsewhere whose wait ran out) is put
// back (nakInfra), but the attempt the enter step counted stayed counted:
// an idempotency-store outage of about 30 s (five runs at the 1 s doubling
// infrastructure delay) dead-lettered in-flight work as UNKNOWN "started N
// times without finishing", a class that waits for a person, though
// Config.MaxDeliveries and configs/worker.yaml say own-infrastructure Naks
// do not count. The attempt is now given back, as for a run the fleet
// cooldown ended.
func TestIdempotencyOutageRunsDoNotSpendTheRunLimit(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"store unavailable", &idempotency.StoreError{Backend: "redis", Op: "claim", Err: errors.New("dial tcp: connection refused")}},
		{"in progress elsewhere", &idempotency.InProgressError{Key: "k", Owner: "other", LeaseUntil: time.Now(), Waited: time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			var failures atomic.Int32
			failures.Store(4)
			ledger := tool.MustFunc("ledger", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
				if failures.Add(-1) >= 0 {
					return nil, c.err
				}
				return tool.OK(nil), nil
			})
			llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Call("ledger", nil)), agenttest.Reply(agenttest.Text("done")))
			w := e.startWorker("w1", e.supportAgent(llm, ledger), worker.Config{MaxDeliveries: 2})
			const id = "inv-idem-outage"
			e.publish(request(id, "s1", "hi"), nil)
			res := e.await(id)
			if res.Status != envelope.StatusCompleted {
				reason := ""
				if en := e.dlqEntries(); len(en) > 0 {
					reason = en[0].Reason
				}
				t.Fatalf("after 4 runs the idempotency layer ended (limit 2): result %s %s (DLQ reason %q), want completed",
					res.Status, res.ErrorClass, reason)
			}
			if n := w.count("support", "nak_infra"); n != 4 {
				t.Errorf("nak_infra = %v, want 4", n)
			}
			if en := e.dlqEntries(); len(en) != 0 {
				t.Errorf("DLQ entries %d, want none", len(en))
			}
			eventually(t, "acked", func() bool { return e.pending() == 0 })
		})
	}
}

// failRunningOnce fails the next write of a running record once armed: the
// give-back of an attempt, written while the invocation store is down.
type failRunningOnce struct {
	*session.MemoryInvocations
	armed atomic.Bool
}

func (s *failRunningOnce) Transition(ctx context.Context, rec *session.Invocation) error {
	if rec.Status == session.InvocationRunning && s.armed.CompareAndSwap(true, false) {
		return errors.New("injected: invocation store down")
	}
	return s.MemoryInvocations.Transition(ctx, rec)
}

// Regression (found in review, twenty-fifth session; the other side of
// TestIdempotencyOutageRunsDoNotSpendTheRunLimit): a give-back that cannot
// be written (the invocation store is down too) leaves the run counted, as
// before, and the run limit still ends the message as a dead letter, never
// drops it. (In a whole-store outage the next deliveries fail at the enter
// step, before anything is counted.)
func TestIdempotencyOutageGiveBackFailureCountsTheRun(t *testing.T) {
	e := newEnv(t)
	invs := &failRunningOnce{MemoryInvocations: e.invs}
	e.deps = func(d *worker.Deps) { d.Invocations = invs }
	ledger := tool.MustFunc("ledger", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		invs.armed.Store(true) // the store goes down with the idempotency store
		return nil, &idempotency.StoreError{Backend: "redis", Op: "claim", Err: errors.New("dial tcp: connection refused")}
	})
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Call("ledger", nil)))
	e.startWorker("w1", e.supportAgent(llm, ledger), worker.Config{MaxDeliveries: 2})
	const id = "inv-idem-outage-giveback-lost"
	e.publish(request(id, "s1", "hi"), nil)
	res := e.await(id)
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != "UNKNOWN" {
		t.Fatalf("result = %+v, want dead_lettered UNKNOWN after 2 counted runs", res)
	}
	if en := e.dlqEntries(); len(en) != 1 || !strings.Contains(en[0].Reason, "started 2 times without finishing") {
		t.Fatalf("dlq = %+v", en)
	}
	eventually(t, "acked", func() bool { return e.pending() == 0 })
}

// Regression (found in review of this session's fix, twenty-fifth session):
// a run another owner's claim ended (idempotency.ErrInProgress) had its
// attempt given back every time. A live owner renews its claim until its
// tool returns, also after the tool's timeout cancelled it, and a tool that
// ignores its context is waited for: such a claim never ends while its
// worker lives, and another message of the invocation was put back for ever
// where the run limit used to dead-letter it. Those runs are now given back
// 2×MaxDeliveries times per replay generation, then count.
func TestInProgressGiveBacksAreBounded(t *testing.T) {
	e := newEnv(t)
	ledger := tool.MustFunc("ledger", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		return nil, &idempotency.InProgressError{Key: "k", Owner: "stuck", LeaseUntil: time.Now().Add(30 * time.Second), Waited: time.Second}
	})
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Call("ledger", nil)))
	w := e.startWorker("w1", e.supportAgent(llm, ledger), worker.Config{MaxDeliveries: 2})
	const id = "inv-idem-in-progress-for-ever"
	e.publish(request(id, "s1", "hi"), nil)
	res := e.await(id)
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != "UNKNOWN" {
		t.Fatalf("result = %+v, want dead_lettered UNKNOWN once the given-back runs are spent", res)
	}
	if en := e.dlqEntries(); len(en) != 1 || !strings.Contains(en[0].Reason, "started 2 times without finishing") {
		t.Fatalf("dlq = %+v", en)
	}
	// 4 runs given back (2×MaxDeliveries), 2 counted, the 7th delivery
	// dead-lettered before it runs.
	if n := w.count("support", "nak_infra"); n != 6 {
		t.Errorf("nak_infra = %v, want 6", n)
	}
	eventually(t, "acked", func() bool { return e.pending() == 0 })
}
