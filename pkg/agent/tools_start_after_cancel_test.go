package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, sixteenth session): once the invocation's context is cancelled the loop must not start more
// work: a call of the step that has not started yet must not run (its
// before-tool callbacks and its tool), because a tool that ignores its
// context "is waited for, not abandoned" (Agent.ToolTimeout), so starting
// it blocks the cancelled invocation for the tool's whole run, and its
// effect happens after the caller gave up. Here MaxParallelTools is 1, so
// the second call starts only after the first returned, and the first
// cancels the invocation.
func TestCancelledInvocationStartsNoFurtherTool(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var laterRuns atomic.Int32
	f := newFixture(t,
		agenttest.Reply(agenttest.Calls(
			&model.FunctionCall{Name: "first", Args: map[string]any{}},
			&model.FunctionCall{Name: "second", Args: map[string]any{}},
		)),
		agenttest.Reply(agenttest.Text("done")),
	)
	f.agent.MaxParallelTools = 1
	f.agent.Tools = append(f.agent.Tools,
		failingTool{name: "first", run: func(context.Context, map[string]any) (map[string]any, error) {
			cancel() // the caller gives up while this call runs
			return tool.OK(nil), nil
		}},
		failingTool{name: "second", run: func(context.Context, map[string]any) (map[string]any, error) {
			laterRuns.Add(1) // ignores its context, like a slow tool would
			return tool.OK(nil), nil
		}},
	)
	_, err := f.runner.Invoke(ctx, agent.RunRequest{
		InvocationID: "inv-cancel", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "go"),
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := laterRuns.Load(); n != 0 {
		t.Fatalf("a tool call was started after the invocation's context was cancelled: second ran %d time(s), want 0", n)
	}
}
