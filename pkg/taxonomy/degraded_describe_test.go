package taxonomy_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// The degraded message names each completed tool call, so the user learns
// that the refund went through, also when a free-text argument looks like
// SQL to the sanitiser (an ordinary customer reason, "I meant to select M
// from the size list", matches "select\s.+\sfrom"). (DefaultDescribeTool
// sanitised the whole description, so the refund was described as
// "[redacted]"; two such calls collapsed into one name, and a completed
// refund was reported as one that "may have gone through".)
func TestDegradedMessageNamesARefundWithAnOrdinaryReason(t *testing.T) {
	refund := agent.CompletedTool{CallID: "c1", Name: "refund_order",
		Args:     map[string]any{"order_id": "A-1042", "amount_cents": 1299.0, "reason": "wrong size, I meant to select M from the size list"},
		Response: tool.OK(map[string]any{"order_id": "A-1042", "refunded_cents": 1299})}
	msg := taxonomy.QueuedDegradedMessage([]agent.CompletedTool{refund}, taxonomy.DefaultDescribeTool)
	if !strings.Contains(msg, "refund_order") || !strings.Contains(msg, "A-1042") || strings.Contains(msg, "[redacted]") {
		t.Errorf("degraded message = %q: the completed refund of A-1042 is not named", msg)
	}

	unknown := agent.CompletedTool{CallID: "c2", Name: "refund_order",
		Args:     map[string]any{"order_id": "A-1077", "amount_cents": 500.0, "reason": "please delete from my account the duplicate charge"},
		Response: tool.Error(tool.ReasonOutcomeUnknown, false, "may have acted")}
	msg = taxonomy.QueuedDegradedMessage([]agent.CompletedTool{refund, unknown}, taxonomy.DefaultDescribeTool)
	if !strings.Contains(msg, "was completed") {
		t.Fatalf("degraded message = %q: the refund that completed is reported only as one that may have gone through", msg)
	}
}
