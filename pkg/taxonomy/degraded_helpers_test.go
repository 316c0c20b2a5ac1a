package taxonomy_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// degradedAnswer runs the support agent with tl, the model answering the
// scripted steps and the fleet's callbacks (ClassifyToolError, the
// taxonomy's OnModelError), and returns the final text: the degraded
// answer when the last step fails.
func degradedAnswer(t *testing.T, id, text string, tl tool.Tool, steps ...agenttest.Step) string {
	t.Helper()
	final := agenttest.FinalText(runDegraded(t, id, text, tl, steps...))
	t.Logf("degraded message: %q", final)
	return final
}

// runDegraded runs the support agent as degradedAnswer does and returns
// the run's events.
func runDegraded(t *testing.T, id, text string, tl tool.Tool, steps ...agenttest.Step) []*session.Event {
	t.Helper()
	runner := &agent.Runner{
		Agent: &agent.Agent{
			Name:  "support",
			Model: agenttest.NewScriptedModel(steps...),
			Tools: []tool.Tool{tl},
			Callbacks: agent.Callbacks{
				OnModelError: []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{})},
				OnToolError:  []agent.OnToolErrorCallback{agent.ClassifyToolError()},
			},
			MaxModelCalls: 10,
		},
		Sessions: session.NewMemory(),
	}
	events, err := agenttest.Collect(runner.Run(context.Background(), agent.RunRequest{
		InvocationID: id, UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, text),
	}))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// wrapForSupport wraps tl with the idempotency wrapper as the support
// agent's side-effecting tools are, over a fresh in-memory store.
func wrapForSupport(tl tool.Tool) tool.Tool {
	return idempotency.Wrap(tl, idempotency.NewMemory(), idempotency.Options{Agent: "support"})
}

// timingOutRefund is a wrapped refund_order tool whose request goes out
// (counted in ran) and whose reply does not come back in time.
func timingOutRefund(ran *atomic.Int32) tool.Tool {
	return wrapForSupport(tool.MustFunc("refund_order", "Refund an order.",
		func(ctx context.Context, a refundArgs) (map[string]any, error) {
			ran.Add(1)
			return nil, fmt.Errorf("orders service: %w", context.DeadlineExceeded)
		}))
}

// refundA1042 is the model's step calling refund_order for order A-1042.
func refundA1042() agenttest.Step {
	return agenttest.Reply(agenttest.Call("refund_order", map[string]any{"order_id": "A-1042", "amount_cents": 1299}))
}

// modelUnavailable is a model step failing with a 503 (after retries).
func modelUnavailable() agenttest.Step {
	return agenttest.Fail(&model.ProviderError{Provider: "sim", StatusCode: 503})
}
