package tool_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, sixteenth session): IsErrorMap's doc says a map reports a failure when it has "a
// "status" other than "ok"". A status that is not a string (an HTTP-style
// 503, false) is other than "ok", but IsErrorMap only looks at string
// statuses and then at "reason", so such a map counts as a success: Sanitize
// (which the agent loop applies to every tool answer) returns it unchanged,
// leaking what it carries, and IsRetryable says false, so the idempotency
// wrapper stores it as final instead of releasing the claim.
func TestNonStringStatusIsAnErrorMap(t *testing.T) {
	m := map[string]any{"status": 503, "retryable": true, "error": "dial tcp 10.0.3.7:5432: connection refused"}
	if !tool.IsErrorMap(m) {
		t.Errorf("IsErrorMap(%v) = false, want true: status 503 is other than \"ok\"", m)
	}
	if !tool.IsRetryable(m) {
		t.Errorf("IsRetryable(%v) = false, want true", m)
	}
	got := tool.Sanitize(m)
	if s, _ := got["error"].(string); strings.Contains(s, "10.0.3.7") {
		t.Errorf("Sanitize(%v)[\"error\"] = %q: the address reaches the model", m, s)
	}
}
