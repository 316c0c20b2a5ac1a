package worker_test

import (
	"context"
	"encoding/json"
	"github.com/nats-io/nats.go/jetstream"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

func mustJSON(t *testing.T, r *envelope.Request) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A replay starts a fresh run count: an invocation dead-lettered twice (the
// run limit is 2) still runs when it is replayed a second time.
func TestReplayStartsAFreshRunCount(t *testing.T) {
	e := newEnv(t)
	fail := func() agenttest.Step {
		return agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"})
	}
	llm := agenttest.NewScriptedModel(fail(), fail(), agenttest.Reply(agenttest.Text("done")))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2})
	e.publish(request("inv-r", "s1", "hi"), nil)
	if res := e.await("inv-r"); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "RATE_LIMITED" {
		t.Fatalf("first run: %+v", res)
	}
	replay := func(n string) *envelope.Result {
		e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-r", "s1", "hi")), "replay-inv-r-"+n,
			map[string]string{envelope.HeaderReplayCount: n, envelope.HeaderResume: "true"})
		return e.await("inv-r")
	}
	if res := replay("1"); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "RATE_LIMITED" {
		t.Fatalf("replay 1: %+v", res)
	}
	if res := replay("2"); res.Status != envelope.StatusCompleted || res.Content != "done" {
		t.Fatalf("replay 2 was not run: %+v", res)
	}
	if llm.Calls() != 3 {
		t.Fatalf("model calls = %d, want 3", llm.Calls())
	}
}

// An invocation ended by a tool (end-invocation action, no final model
// response) completes; it does not crash the handler.
func TestEndInvocationByToolCompletes(t *testing.T) {
	e := newEnv(t)
	handoff := tool.MustFunc("handoff", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		tool.FromContext(ctx).EndInvocation()
		return tool.OK(nil), nil
	})
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Call("handoff", nil)))
	w := e.startWorker("w1", e.supportAgent(llm, handoff), worker.Config{MaxDeliveries: 3})
	e.publish(request("inv-end", "s1", "hand me over"), nil)
	res := e.await("inv-end")
	if res.Status != envelope.StatusCompleted || res.Attempts != 1 || len(res.ToolsRun) != 1 {
		t.Fatalf("result = %+v", res)
	}
	eventually(t, "acked once", func() bool { return e.pending() == 0 && w.count("support", "completed") == 1 })
}

// A completed invocation arriving again is not run, and its result is
// re-published when the results stream no longer holds it.
func TestCompletedInvocationRepublishesAMissingResult(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("hello")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-lost-result", "s1", "hi"), nil)
	if res := e.await("inv-lost-result"); res.Status != envelope.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(e.sc.ResultSubject("inv-lost-result"))); err != nil {
		t.Fatal(err)
	}
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-lost-result", "s1", "hi")), "inv-lost-result-again", nil)
	res := e.await("inv-lost-result")
	if res.Status != envelope.StatusCompleted || res.Content != "hello" {
		t.Fatalf("re-published result = %+v", res)
	}
	// The core subscription can see the re-published result before the
	// stream has stored it; the worker acks only after the PubAck, so wait
	// for the ack before looking in the stream.
	eventually(t, "duplicate acked", func() bool { return w.count("support", "duplicate") == 1 })
	if _, err := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject("inv-lost-result")); err != nil {
		t.Fatalf("result not back in the stream: %v", err)
	}
	if llm.Calls() != 1 {
		t.Fatalf("model calls = %d: the invocation ran again", llm.Calls())
	}
}

// A CALL_BUDGET entry replayed after the loop was fixed runs with a fresh
// budget when the replay carries Agent-Fresh-Budget (the replayer sets it);
// without it the resumed run is charged its earlier calls and stops again
// before calling the model.
func TestForcedCallBudgetReplayGetsAFreshBudget(t *testing.T) {
	e := newEnv(t)
	call := func() agenttest.Step {
		return agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"}))
	}
	llm := agenttest.NewScriptedModel(call(), call(), agenttest.Reply(agenttest.Text("fixed")))
	ag := e.supportAgent(llm)
	ag.MaxModelCalls = 2
	e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-budget", "s1", "loop"), nil)
	if res := e.await("inv-budget"); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "CALL_BUDGET" {
		t.Fatalf("first run: %+v", res)
	}
	replay := func(n string, fresh bool) *envelope.Result { return replayAs(t, e, "inv-budget", n, fresh) }
	if res := replay("1", false); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "CALL_BUDGET" || llm.Calls() != 2 {
		t.Fatalf("replay without a fresh budget: %+v after %d model calls, want CALL_BUDGET after 2", res, llm.Calls())
	}
	if res := replay("2", true); res.Status != envelope.StatusCompleted || res.Content != "fixed" {
		t.Fatalf("replay with a fresh budget: %+v", res)
	}
	if llm.Calls() != 3 {
		t.Fatalf("model calls = %d, want 3", llm.Calls())
	}
}

// The reset holds: a forced replay with a fresh budget that then fails
// transiently is dead-lettered as SERVER, and the replay of that entry
// (which carries no Agent-Fresh-Budget) is charged only the calls since the
// reset, not the looping run's too (it used to stop at once as CALL_BUDGET
// again, back to a person).
func TestFreshBudgetHoldsForTheNextReplay(t *testing.T) {
	e := newEnv(t)
	call := func() agenttest.Step {
		return agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"}))
	}
	llm := agenttest.NewScriptedModel(call(), call(), call(), // run 1: the loop spends the budget
		call(), agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 503}), // the forced replay
		agenttest.Reply(agenttest.Text("fixed"))) // the replay of its SERVER entry
	ag := e.supportAgent(llm)
	ag.MaxModelCalls = 3
	e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-keep", "s1", "loop"), nil)
	if res := e.await("inv-keep"); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "CALL_BUDGET" {
		t.Fatalf("first run: %+v", res)
	}
	replay := func(n string, fresh bool) *envelope.Result { return replayAs(t, e, "inv-keep", n, fresh) }
	if res := replay("1", true); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "SERVER" {
		t.Fatalf("forced replay: %+v, want dead-lettered as SERVER", res)
	}
	if res := replay("2", false); res.Status != envelope.StatusCompleted || res.Content != "fixed" {
		t.Fatalf("replay of the SERVER entry: %+v after %d model calls, want completed", res, llm.Calls())
	}
	if llm.Calls() != 6 {
		t.Fatalf("model calls = %d, want 6", llm.Calls())
	}
}

// replayAs publishes replay n of invocation id's "loop" request (session
// s1), with Agent-Fresh-Budget if fresh, and waits for its result.
func replayAs(t *testing.T, e *env, id, n string, fresh bool) *envelope.Result {
	t.Helper()
	h := map[string]string{envelope.HeaderReplayCount: n, envelope.HeaderResume: "true"}
	if fresh {
		h[envelope.HeaderFreshBudget] = "true"
	}
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request(id, "s1", "loop")), "replay-"+id+"-"+n, h)
	return e.await(id)
}

// A first delivery cannot reset the budget: the header only counts on a
// replay.
func TestFreshBudgetHeaderIgnoredOutsideReplays(t *testing.T) {
	e := newEnv(t)
	call := func() agenttest.Step {
		return agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"}))
	}
	llm := agenttest.NewScriptedModel(call(), call(), call(), agenttest.Reply(agenttest.Text("never")))
	ag := e.supportAgent(llm)
	ag.MaxModelCalls = 2
	e.startWorker("w1", ag, worker.Config{})
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-nofresh", "s1", "loop")), "inv-nofresh",
		map[string]string{envelope.HeaderFreshBudget: "true"})
	if res := e.await("inv-nofresh"); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "CALL_BUDGET" || llm.Calls() != 2 {
		t.Fatalf("result %+v after %d model calls, want CALL_BUDGET after 2", res, llm.Calls())
	}
}
