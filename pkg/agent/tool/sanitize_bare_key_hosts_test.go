package tool_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, twentieth session): bareKeyRE ran before
// the path and host patterns and replaced a key-shaped first label of a
// host name or a file name; the host/path patterns then no longer saw a
// host or a path ("[redacted]" is none), and the rest leaked: the port, the
// internal domain, the file's extension and directory tail. Before the
// bare-key pass these strings were redacted whole ("dial tcp [redacted]:
// …"), and they are again now that it runs last. Region-prefixed names
// ("sk-…" Slovakia, "pk-…" Pakistan) are common.
func TestSanitizeBareKeyKeepsHostAndPathRedaction(t *testing.T) {
	for _, tc := range []struct{ in, leak string }{
		{"dial tcp sk-prod-orders-db-01.internal:5432: connect: connection refused", ":5432"},
		{"dial tcp sk-prod-orders-db-01.internal:5432: connect: connection refused", ".internal"},
		{"dial tcp 10.0.0.7:5432->pk-redis-cache-0001.corp:6379: reset", ":6379"},
		{"connect admin:hunter2@pk-orders-db-2024-01:3306 refused", ":3306"},
		{"open /srv/orders/pk_exports_2024_01_01/data.db: no such file", "data.db"},
	} {
		if got := tool.SanitizeString(tc.in); strings.Contains(got, tc.leak) {
			t.Errorf("SanitizeString(%q) = %q: %q leaks (the bare-key pass ran before the host/path patterns)", tc.in, got, tc.leak)
		}
	}
}
