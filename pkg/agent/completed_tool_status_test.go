package agent_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, seventeenth session): tool.IsErrorMap (what the loop counts as "error_map" and
// sanitises) says a map whose "status" is not the string "ok" reports a
// failure, "a number such as 503 or null included". CompletedTool.Succeeded
// only reads a string status and otherwise looks for "reason", so the same
// map counts as a success, and the degraded message (taxonomy.OnModelError)
// tells the user the step "was completed" when it failed.
func TestCompletedToolNumericStatusIsNotSuccess(t *testing.T) {
	for _, resp := range []map[string]any{
		{"status": 503, "retryable": true, "error": "payments unavailable"},
		{"status": nil, "error": "payments unavailable"},
	} {
		if !tool.IsErrorMap(resp) {
			t.Fatalf("precondition: IsErrorMap(%v) = false", resp)
		}
		ct := agent.CompletedTool{CallID: "c1", Name: "refund_order", Response: resp}
		if ct.Succeeded() {
			t.Errorf("CompletedTool{Response: %v}.Succeeded() = true, but tool.IsErrorMap says it failed", resp)
		}
	}
}
