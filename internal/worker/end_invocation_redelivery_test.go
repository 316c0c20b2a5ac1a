package worker_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// infraErr is an error of the worker's own infrastructure (an
// idempotency store that is down fails closed with one): the worker puts
// the message back, and the redelivery resumes the invocation.
type infraErr struct{}

func (infraErr) Error() string        { return "store unavailable" }
func (infraErr) Infrastructure() bool { return true }

// A model response asks for a hand-off (a tool that ends the invocation)
// and a second call whose store is briefly down. The worker puts the
// message back; the redelivery resumes, runs the second call, and must end
// there, as the hand-off asked. (Before the fix it called the model again
// and ran the tool that call asked for: work, and a side effect, after the
// invocation was ended.)
func TestRedeliveryStopsWhereAToolEndedTheInvocation(t *testing.T) {
	e := newEnv(t)
	var down atomic.Bool
	down.Store(true)
	var charges atomic.Int32
	handoff := tool.MustFunc("handoff", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		tool.FromContext(ctx).EndInvocation()
		return tool.OK(nil), nil
	})
	note := tool.MustFunc("note", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		if down.CompareAndSwap(true, false) {
			return nil, infraErr{}
		}
		return tool.OK(nil), nil
	})
	charge := tool.MustFunc("charge", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		charges.Add(1)
		return tool.OK(nil), nil
	})
	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Calls(
			&model.FunctionCall{Name: "handoff", Args: map[string]any{}},
			&model.FunctionCall{Name: "note", Args: map[string]any{}},
		)),
		// Reached only if the ended invocation is run on.
		agenttest.Reply(agenttest.Call("charge", nil)),
		agenttest.Reply(agenttest.Text("Charged.")),
	)
	w := e.startWorker("w1", e.supportAgent(llm, handoff, note, charge), worker.Config{})
	e.publish(request("inv-handoff", "s1", "hand me over"), nil)
	res := e.await("inv-handoff")
	eventually(t, "acked", func() bool { return e.pending() == 0 })
	if n := w.count("support", "nak_infra"); n != 1 {
		t.Fatalf("nak_infra = %v, want 1 (the store outage)", n)
	}
	if res.Status != envelope.StatusCompleted || llm.Calls() != 1 || charges.Load() != 0 {
		t.Fatalf("after the hand-off ended the invocation, the redelivery ran on: status %s, model calls %d (want 1), charge ran %d time(s) (want 0), content %q, tools %v",
			res.Status, llm.Calls(), charges.Load(), res.Content, res.ToolsRun)
	}
}
