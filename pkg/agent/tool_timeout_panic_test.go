package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// A tool that panics is a bug the model cannot act on: with the production
// callback (ClassifyToolError) a *tool.PanicError escalates and ends the
// invocation (TestToolPanicWithoutCallbackEscalates), also when the panic
// happens after Agent.ToolTimeout passed (here: the tool's backend call
// gave up on the deadline and the tool dereferences the nil reply it did
// not check). (invokeToolWithin wrapped that *tool.PanicError in a
// *ToolTimeoutError, which matches context.DeadlineExceeded, so
// ClassifyToolError answered the model {"reason":"timeout","retryable":true}:
// the crash was hidden and the model invited to call the tool again.)
func TestPanicAfterToolTimeoutIsNotATimeoutMap(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Call("lookup", nil)),
		agenttest.Reply(agenttest.Text("The lookup timed out; let me try again.")),
	)
	f.agent.ToolTimeout = 20 * time.Millisecond
	type reply struct{ Items []string }
	backend := func(ctx context.Context) (*reply, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "lookup", run: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		r, _ := backend(ctx)
		return map[string]any{"status": "ok", "first": r.Items[0]}, nil // nil pointer: a runtime panic
	}})
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{agent.ClassifyToolError()}

	events, err := f.run(t, "inv-1", "look it up")
	var pe *tool.PanicError
	if !errors.As(err, &pe) {
		m := map[string]any(nil)
		if len(agenttest.FunctionResponses(events)) > 0 {
			m = agenttest.ResponseFor(t, events, "lookup")
		}
		t.Fatalf("invocation error = %v, model calls = %d, response to the model = %v; want the invocation to end with a *tool.PanicError (a panic is not a timeout the model can retry)",
			err, f.model.Calls(), m)
	}
}
