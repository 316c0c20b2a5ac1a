package tool_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// SanitizeString strips control characters before it looks for SQL; a tab
// is a space there, so a statement laid out with tabs ("SELECT\tid ...")
// keeps the whitespace sqlRE needs and is redacted (before, it reached the
// model verbatim, table and column names included).
func TestSanitizeTabSeparatedSQL(t *testing.T) {
	for _, in := range []string{
		"query failed: SELECT\temail, card_last4 FROM customers WHERE id = 7",
		"DELETE\tFROM refunds WHERE order_id = 'A-1042'",
	} {
		got := tool.SanitizeString(in)
		if got != "[redacted]" {
			t.Errorf("SanitizeString(%q) = %q, want [redacted] (SQL)", in, got)
		}
	}
}

// host:port pairs are redacted, also a single-label host (a Kubernetes or
// compose service) in Go's own network errors, and a failed lookup's name;
// a "code:500" in plain text is left alone.
func TestSanitizeSingleLabelHostPort(t *testing.T) {
	for in, host := range map[string]string{
		"dial tcp orders-db:5432: connect: connection refused": "orders-db",
		"redis: dial tcp redis-primary:6379: i/o timeout":      "redis-primary",
		"read tcp 10.0.0.1:40000->orders-db:5432: reset":       "orders-db",
		"lookup orders-db on 10.0.0.2:53: no such host":        "orders-db",
		"connect postgres@orders-db:5432 failed":               "orders-db",
	} {
		got := tool.SanitizeString(in)
		if strings.Contains(got, host) {
			t.Errorf("SanitizeString(%q) = %q still names the internal host %q", in, got, host)
		}
	}
}

func TestSanitizeKeepsPlainColons(t *testing.T) {
	for _, in := range []string{"upstream answered code:500", "retry in 30s (attempt 2 of 3)"} {
		if got := tool.SanitizeString(in); got != in {
			t.Errorf("SanitizeString(%q) = %q, want it unchanged", in, got)
		}
	}
}

// Only a DNS error's shape ("lookup orders-db on 10.0.0.2:53: no such
// host") has its name redacted; the word after any other "lookup" is plain
// text the model (and the DLQ reason) needs, and its case is kept.
func TestLookupWordIsNotAHost(t *testing.T) {
	for in, want := range map[string]string{
		"order lookup failed, try again later": "order lookup failed, try again later",
		"customer lookup timed out":            "customer lookup timed out",
		"Lookup A-1042 returned no order":      "Lookup A-1042 returned no order",
	} {
		if got := tool.SanitizeString(in); got != want {
			t.Errorf("SanitizeString(%q) = %q, want it unchanged (no host in it)", in, got)
		}
	}
	// The DNS case still redacts.
	if got := tool.SanitizeString("dial tcp: lookup orders-db on 10.0.0.2:53: no such host"); got == "dial tcp: lookup orders-db on 10.0.0.2:53: no such host" {
		t.Errorf("DNS lookup error kept: %q", got)
	}
}
