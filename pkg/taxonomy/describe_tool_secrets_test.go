package taxonomy_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, sixteenth session): DefaultDescribeTool is "sanitised and capped like a tool error string".
// The sanitiser redacts credentials by their name ("password=…",
// "api_key=…", "host=…"): a value alone ("hunter2") says nothing. Now that
// each value is sanitised on its own and the "name=value" pieces are never
// sanitised together, a completed call's secret argument reaches the
// degraded message the user reads (and the result's user_message); before
// the change the assembled text was sanitised and read
// "password=[redacted]".
func TestDescribeToolRedactsNamedSecrets(t *testing.T) {
	for _, tc := range []struct{ key, secret string }{
		{"password", "hunter2"},
		{"api_key", "sk-live-abc123"},
		{"host", "orders-db"},
	} {
		ct := agent.CompletedTool{Name: "verify_account", Args: map[string]any{tc.key: tc.secret}}
		got := taxonomy.DefaultDescribeTool(ct)
		if strings.Contains(got, tc.secret) {
			t.Errorf("DefaultDescribeTool(%s=%q) = %q: the value of a credential-named argument is not redacted", tc.key, tc.secret, got)
		}
		msg := taxonomy.DefaultDegradedMessage([]agent.CompletedTool{ct}, taxonomy.DefaultDescribeTool)
		if strings.Contains(msg, tc.secret) {
			t.Errorf("degraded message tells the user %q", msg)
		}
	}
}
