package taxonomy_test

import (
	"context"
	"fmt"
	"strings"
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

// The seed's worked example: refundOrder had already run when the next
// model call failed, "so the fallback wrongly said nothing was completed".
// Here the refund's downstream call went out and timed out: the idempotency
// wrapper stores the outcome_unknown error map ("The tool failed after it
// may have acted ... Tell the user it is being checked"), the tool-error
// callback tells the model to try once more, and the second call answers
// outcome_unknown from the record (the app's wiring). The next model call
// fails with a 503 after retries. The degraded message told the user "Your
// request was not completed ... Please try again", inviting a new request
// (a new invocation id, hence a new idempotency key and a second refund);
// it now names the refund as being checked, once, and asks not to repeat.
func TestDegradedMessageDoesNotDenyAnEffectOfUnknownOutcome(t *testing.T) {
	var ran atomic.Int32
	refund := tool.MustFunc("refund_order", "Refund an order.",
		func(ctx context.Context, a refundArgs) (map[string]any, error) {
			ran.Add(1)
			// The refund request went out; its reply did not come back in time.
			return nil, fmt.Errorf("orders service: %w", context.DeadlineExceeded)
		})
	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("refund_order", map[string]any{"order_id": "A-1042", "amount_cents": 1299})),
		// "The tool timed out; you may try once more": the wrapper answers
		// from its record this time.
		agenttest.Reply(agenttest.Call("refund_order", map[string]any{"order_id": "A-1042", "amount_cents": 1299})),
		agenttest.Fail(&model.ProviderError{Provider: "sim", StatusCode: 503}),
	)
	sessions := session.NewMemory()
	runner := &agent.Runner{
		Agent: &agent.Agent{
			Name:  "support",
			Model: llm,
			Tools: []tool.Tool{idempotency.Wrap(refund, idempotency.NewMemory(), idempotency.Options{Agent: "support"})},
			Callbacks: agent.Callbacks{
				OnModelError: []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{})},
				OnToolError:  []agent.OnToolErrorCallback{agent.ClassifyToolError()},
			},
			MaxModelCalls: 10,
		},
		Sessions: sessions,
	}
	events, err := agenttest.Collect(runner.Run(context.Background(), agent.RunRequest{
		InvocationID: "inv-unknown-outcome", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "Please refund order A-1042"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 1 {
		t.Fatalf("refund ran %d times", ran.Load())
	}
	var resp map[string]any
	for _, e := range events {
		for _, fr := range e.FunctionResponses() {
			resp = fr.Response
		}
	}
	if resp["reason"] != "outcome_unknown" {
		t.Fatalf("tool response = %v, want the outcome_unknown map", resp)
	}
	final := agenttest.FinalText(events)
	if strings.HasPrefix(final, "Your request was not completed") || !strings.Contains(final, "refund_order") {
		t.Fatalf("degraded message denies a refund that may have happened: %q", final)
	}
	if strings.Count(final, "refund_order") != 1 || !strings.Contains(final, "being checked") ||
		strings.Contains(final, "try again") {
		t.Fatalf("degraded message = %q, want the refund named once as being checked, and no invitation to try again", final)
	}
}
