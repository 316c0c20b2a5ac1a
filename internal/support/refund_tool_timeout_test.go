package support_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review, twentieth session): the agent's ToolTimeout
// ends a wrapped refund_order whose booking script ran on Redis; the loop
// (ClassifyToolError) answers a timeout of a wrapped tool with
// "may_have_acted": true (eighteenth session), so neither the model nor
// the degraded message says the refund did not happen. The shipped tool
// never let the loop see the timeout: RedisOrders wrapped the context's
// deadline as ErrUnavailable and refund_order returned
// {"reason":"orders_service_timeout","retryable":true} with a nil error.
func TestRefundToolTimeoutAfterBookingMayHaveActed(t *testing.T) {
	resp := refundWithLateReply(t, func(o support.Orders) tool.Tool {
		return idempotency.Wrap(support.RefundOrder(o, idempotency.KeyFromContext),
			idempotency.NewMemory(), idempotency.Options{Agent: "support", KeyFields: support.RefundKeyFields})
	}, map[string]any{"order_id": "A-1042", "amount_cents": 500.0, "reason": "damaged"})
	done := agent.CompletedTool{Name: support.RefundOrderTool, Response: resp}
	if !done.OutcomeUnknown() {
		t.Errorf("refund_order timed out after booking, answered %v: no may_have_acted / outcome_unknown "+
			"(a wrapped tool's timeout gets may_have_acted from ClassifyToolError)", resp)
	}
}
