package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// flakySessions fails the next session write once failNext is set (the
// session store briefly down): the run ends with a *agent.SessionError and
// the worker puts the message back (own infrastructure), so it is
// redelivered.
type flakySessions struct {
	*session.Memory
	failNext atomic.Bool
}

var errStoreDown = errors.New("session store down")

func (s *flakySessions) AppendEvent(ctx context.Context, key session.Key, ev *session.Event) error {
	if s.failNext.CompareAndSwap(true, false) {
		return errStoreDown
	}
	return s.Memory.AppendEvent(ctx, key, ev)
}

func (s *flakySessions) AppendEvents(ctx context.Context, key session.Key, evs []*session.Event) error {
	if s.failNext.CompareAndSwap(true, false) {
		return errStoreDown
	}
	return session.AppendEvents(ctx, s.Memory, key, evs)
}

// Regression (found in review, seventeenth session): A forced CALL_BUDGET replay carries Agent-Fresh-Budget: its run starts
// the budget at zero. When that run is cut short and the message is
// redelivered (here the session store fails a write: the worker Naks), the
// redelivery is the same message with the same header, and it resets the
// budget again, forgetting the calls the replay's first run made. Every
// redelivery of the replay so gets a whole new budget: a loop the person
// did not actually fix runs up to MaxDeliveries budgets instead of one.
// The redelivery must be charged the replay's stored calls.
func TestRetryFreshBudgetIsNotResetAgainOnRedelivery(t *testing.T) {
	e := newEnv(t)
	sessions := &flakySessions{Memory: e.sessions}
	e.deps = func(d *worker.Deps) { d.Agents["support"].Sessions = sessions }
	call := func() agenttest.Step {
		return agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"}))
	}
	var holdRuns atomic.Int32
	hold := tool.MustFunc("hold", "a tool", func(context.Context, struct{}) (map[string]any, error) {
		if holdRuns.Add(1) == 1 {
			sessions.failNext.Store(true) // the next write (after the next model call) fails
		}
		return map[string]any{"status": "ok"}, nil
	})
	llm := agenttest.NewScriptedModel(
		call(), call(), // first run: the loop spends the budget of 2 → CALL_BUDGET
		agenttest.Reply(agenttest.Call("hold", nil)), // the forced replay: call 1 since the reset (stored)
		call(), // call 2 since the reset: its write fails, the message goes back
		call(), // the redelivery: call 2 since the reset again (the lost one is made again), the last allowed
		agenttest.Reply(agenttest.Text("call 3 since the reset")), // must be refused
	)
	ag := e.supportAgent(llm, hold)
	ag.MaxModelCalls = 2
	e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-fresh", "s1", "loop"), nil)
	if res := e.await("inv-fresh"); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "CALL_BUDGET" {
		t.Fatalf("first run: %+v", res)
	}

	// The person forces the replay (what the replayer publishes for a
	// CALL_BUDGET entry).
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-fresh", "s1", "loop")), "replay-inv-fresh-1",
		map[string]string{envelope.HeaderReplayCount: "1", envelope.HeaderResume: "true", envelope.HeaderFreshBudget: "true"})
	res := e.await("inv-fresh")
	if holdRuns.Load() < 1 {
		t.Fatalf("the replay never ran the hold tool; result %+v", res)
	}
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != "CALL_BUDGET" || llm.Calls() > 5 {
		t.Errorf("redelivered forced replay: status %s class %q content %q after %d model calls; want CALL_BUDGET after at most 5 "+
			"(the replay's stored call and one more: its budget of 2)", res.Status, res.ErrorClass, res.Content, llm.Calls())
	}
}
