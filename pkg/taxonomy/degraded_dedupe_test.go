package taxonomy_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// CallbackOptions.DescribeTool's documented example names a call by its
// order ("your refund for order A-1042"). Two partial refunds of one order
// (different amounts: different idempotency keys) where the first completed
// and the second's outcome is unknown are described alike; the dedupe by
// description dropped the unknown one, and the message invited the user to
// "try again" although a refund may have gone through. A name shared by a
// call of unknown outcome is named as being checked.
func TestDedupeKeepsAnUnknownOutcome(t *testing.T) {
	byOrder := func(c agent.CompletedTool) string { return "your refund for order " + c.Args["order_id"].(string) }
	calls := []agent.CompletedTool{
		{CallID: "c1", Name: "refund_order", Args: map[string]any{"order_id": "A-1042", "amount_cents": 500.0}, Response: tool.OK(nil)},
		{CallID: "c2", Name: "refund_order", Args: map[string]any{"order_id": "A-1042", "amount_cents": 300.0},
			Response: tool.Error(tool.ReasonOutcomeUnknown, false, "The tool failed after it may have acted.")},
	}
	if !calls[0].Succeeded() || !calls[1].OutcomeUnknown() {
		t.Fatal("fixture: want one success and one unknown outcome")
	}
	msg := taxonomy.DefaultDegradedMessage(calls, byOrder)
	if !strings.Contains(msg, "being checked") || strings.Contains(msg, "try again") {
		t.Fatalf("degraded message = %q: the refund whose outcome is unknown is not named and the user is asked to try again", msg)
	}
}

// QueuedDegradedMessage names what happened as DefaultDegradedMessage does
// and, instead of "try again", says the request is queued.
func TestQueuedDegradedMessage(t *testing.T) {
	done := agent.CompletedTool{CallID: "c1", Name: "get_order", Args: map[string]any{"order_id": "A-1042"}, Response: tool.OK(nil)}
	unknown := agent.CompletedTool{CallID: "c2", Name: "refund_order", Args: map[string]any{"order_id": "A-1042"},
		Response: tool.Error(tool.ReasonOutcomeUnknown, false, "may have acted")}
	for _, tc := range []struct {
		calls []agent.CompletedTool
		has   []string
	}{
		{nil, []string{"Your request was not completed", "queued"}},
		{[]agent.CompletedTool{done}, []string{"get_order (order_id=A-1042) was completed", "queued"}},
		{[]agent.CompletedTool{done, unknown}, []string{"was completed", "refund_order (order_id=A-1042) may have gone through", "queued"}},
	} {
		msg := taxonomy.QueuedDegradedMessage(tc.calls, taxonomy.DefaultDescribeTool)
		for _, h := range tc.has {
			if !strings.Contains(msg, h) {
				t.Errorf("%q: want %q in it", msg, h)
			}
		}
		if strings.Contains(msg, "try again") {
			t.Errorf("%q: a queued request must not ask the user to try again", msg)
		}
	}
}
