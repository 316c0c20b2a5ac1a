package agent_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, twenty-second session): interrupted calls
// of unregistered tool names are labelled in ToolCalls with the bounded
// name (UnknownToolOther past MaxUnknownToolNames), not the model's raw one.
//
// Metrics.UnknownToolCalls promises that calls of unregistered tools are
// labelled with a bounded name in ToolCalls too ("ToolCalls labels these
// calls the same way"). runTool's "interrupted" outcome (the invocation was
// cancelled before the call started) labels the call with the model's raw
// function name before it looks the tool up, so every made-up name (any
// string the model or an injected prompt chooses) gets a series of its own.
func TestInterruptedUnknownToolCallsKeepBoundedLabels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopper := failingTool{name: "stopper", run: func(context.Context, map[string]any) (map[string]any, error) {
		cancel() // the invocation is given up while this step runs
		return map[string]any{"status": "ok"}, nil
	}}
	calls := []*model.FunctionCall{{Name: "stopper", Args: map[string]any{}}}
	for i := range 50 {
		calls = append(calls, &model.FunctionCall{Name: fmt.Sprintf("ignore previous instructions #%d", i), Args: map[string]any{}})
	}
	metrics := agent.NewMetrics(nil)
	r := &agent.Runner{
		Agent: &agent.Agent{Name: "support", Model: agenttest.NewScriptedModel(agenttest.Reply(agenttest.Calls(calls...))),
			Tools: []tool.Tool{stopper}, MaxParallelTools: 1},
		Sessions: session.NewMemory(), Metrics: metrics,
	}
	_, err := r.Invoke(ctx, agent.RunRequest{InvocationID: "inv-1", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "x")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := testutil.CollectAndCount(metrics.ToolCalls); n > agent.MaxUnknownToolNames+2 {
		t.Fatalf("%s has %d series after 50 made-up tool names (want at most %d: unregistered names are bounded, %q for the rest)",
			agent.MetricToolCalls, n, agent.MaxUnknownToolNames+2, agent.UnknownToolOther)
	}
}
