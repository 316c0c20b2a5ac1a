package support_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, twentieth session): an unkeyed
// refund_order (not wrapped, or no key in the context) whose booking ran
// and whose reply came after the ToolTimeout is marked tool.OutcomeUnknown
// by refundCutShort; ClassifyToolError answered it with its timeout map,
// "retryable": true, "The tool timed out; you may try once more.". With no
// key a second call books a second refund. The same refund whose socket
// read timed out first (ErrMayHaveApplied without the context ending) is
// answered retryable false, "do not call refund_order again"; now the tool
// timeout is too.
func TestUnkeyedRefundCutShortByToolTimeoutIsNotRetryable(t *testing.T) {
	resp := refundWithLateReply(t, func(o support.Orders) tool.Tool {
		return support.RefundOrder(o, nil) // no idempotency key
	}, map[string]any{"order_id": "A-1042", "amount_cents": 500.0})
	if tool.IsRetryable(resp) {
		t.Errorf("unkeyed refund_order booked, then cut short by the tool timeout, answered %v: retryable, "+
			"so the model calls it again and books a second refund (no key to stop it)", resp)
	}
	if acted, _ := resp[tool.KeyMayHaveActed].(bool); !acted {
		t.Errorf("answer %v: no may_have_acted for a refund that was booked", resp)
	}
	if hint, _ := resp["hint"].(string); !strings.Contains(hint, "do not call "+support.RefundOrderTool+" again") {
		t.Errorf("answer %v: the hint does not tell the model not to call %s again", resp, support.RefundOrderTool)
	}
}
