package tool_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, sixteenth session): SanitizeString's doc promises "host:port pairs ... redacted", and
// netHostPortRE / lookupRE exist for single-label compose and Kubernetes
// service names. Compose service and container names commonly contain an
// underscore ("orders_db", "myapp_redis_1"), which Go's dialer and resolver
// accept, but every host pattern spells a label as [a-z0-9-], so the host
// name (and its port) reaches the model verbatim.
func TestSanitizeRedactsUnderscoreHostNames(t *testing.T) {
	cases := []struct{ in, host string }{
		{"dial tcp orders_db:5432: connect: connection refused", "orders_db"},
		{"dial tcp redis_cache.prod:6379: i/o timeout", "redis_cache.prod"},
		{"dial tcp: lookup orders_db: no such host", "orders_db"},
		{"read tcp 172.18.0.5:41234->myapp_redis_1:6379: read: connection reset by peer", "myapp_redis_1"},
	}
	for _, c := range cases {
		got := tool.SanitizeString(c.in)
		if strings.Contains(got, c.host) {
			t.Errorf("SanitizeString(%q) = %q: host %q leaks", c.in, got, c.host)
		}
		m := tool.Sanitize(tool.Error("orders_unreachable", true, c.in))
		if h, _ := m["hint"].(string); strings.Contains(h, c.host) {
			t.Errorf("Sanitize(error map).hint = %q: host %q leaks", h, c.host)
		}
	}
}
