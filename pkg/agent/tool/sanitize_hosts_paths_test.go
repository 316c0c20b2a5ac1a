package tool_test

import (
	"net"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// What a tool author puts in an error map from a backend error
// reaches the model after tool.Sanitize, the loop's last defence. Go's own
// network errors write an IPv6 peer as "[addr]:port" after a space
// ("dial tcp [::1]:6379: connect: connection refused", the Redis on this
// machine also listens on ::1). (hostPortRE's alternative for
// "\[[0-9a-f:]+\]" never matched there: its leading \b cannot hold between
// a space, or the start, and '['.)
func TestSanitizeRedactsBracketedIPv6(t *testing.T) {
	_, dialErr := net.Dial("tcp", "[::1]:1") // a real error text from the standard library
	if dialErr == nil {
		t.Skip("something listens on [::1]:1")
	}
	for _, in := range []string{
		dialErr.Error(),
		"redis: dial tcp [fd00:10:96::a]:6379: i/o timeout",
		"read tcp [fd00::2]:40000->[fd00::1]:4222: read: connection reset by peer",
		"[2001:db8::5]:6379",
	} {
		m := tool.Sanitize(tool.Error("orders_store_unavailable", true, in))
		hint, _ := m["hint"].(string)
		for _, addr := range []string{"::1", "fd00", "2001:db8"} {
			if strings.Contains(hint, addr) {
				t.Errorf("Sanitize kept the IPv6 address %q: hint %q (from %q)", addr, hint, in)
			}
		}
	}
}

// A bare IPv6 address (no brackets, no port) is an IP address too (ipRE
// knows only IPv4).
func TestSanitizeRedactsBareIPv6(t *testing.T) {
	for _, in := range []string{
		"no route to host fd00:10:96::7",
		"connection from 2001:db8:85a3::8a2e:370:7334 refused",
	} {
		got := tool.SanitizeString(in)
		if strings.Contains(got, "fd00:10:96::7") || strings.Contains(got, "2001:db8:85a3") {
			t.Errorf("SanitizeString(%q) = %q keeps the IPv6 address", in, got)
		}
	}
}

// A DSN with credentials that is not in URL form (go-sql-driver/mysql's
// "user:pass@tcp(host:port)/db", libpq/pgx "key=value") keeps its
// password and host out of the map (urlRE needs "://", netHostPortRE
// needed whitespace after "tcp", hostPortRE a dot in the host).
func TestSanitizeRedactsNonURLDSN(t *testing.T) {
	for in, secrets := range map[string][]string{
		"connect admin:hunter2@tcp(orders-db:3306)/orders: refused":                                         {"hunter2", "orders-db"},
		"failed to connect to `host=orders-db user=admin password=hunter2 database=orders`: server refused": {"hunter2", "orders-db"},
	} {
		got := tool.SanitizeString(in)
		for _, s := range secrets {
			if strings.Contains(got, s) {
				t.Errorf("SanitizeString(%q) = %q keeps %q", in, got, s)
			}
		}
	}
}

// File paths: a Redis client on a unix socket, a NATS credentials file,
// a Windows path, a UNC path: all redacted.
func TestSanitizeRedactsFilePaths(t *testing.T) {
	for in, path := range map[string]string{
		"dial unix /var/run/redis/redis.sock: connect: no such file or directory":  "/var/run/redis",
		"nats: open /etc/agentfleet/nats/worker.creds: permission denied":          "/etc/agentfleet",
		`open C:\ProgramData\agentfleet\secrets\orders.db: Access is denied.`:      `C:\ProgramData`,
		`open \\fileserver01\finance\refunds.csv: The network path was not found.`: `\\fileserver01`,
	} {
		got := tool.SanitizeString(in)
		if strings.Contains(got, path) {
			t.Errorf("SanitizeString(%q) = %q keeps the path %q", in, got, path)
		}
	}
}

// The new patterns leave ordinary text alone: a time, a C++ name, a status
// code, a fraction, an either-or.
func TestSanitizeKeepsOrdinaryTextWithColonsAndSlashes(t *testing.T) {
	for _, in := range []string{
		"retry at 10:23:45",
		"std::string is not a string",
		"upstream answered code:500",
		"refund 3/4 of the amount, and/or a voucher",
		"the A/B test ended",
		"size=M colour=blue",
	} {
		if got := tool.SanitizeString(in); got != in {
			t.Errorf("SanitizeString(%q) = %q, want it unchanged", in, got)
		}
	}
}
