package replayer

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Regression (found in review, twentieth session): a malformed metrics
// address (a bare port, a port out of range) passed the configuration
// check, and `drain` connected to NATS and Redis, checked the stores, the
// retention and the parked stream, and only then failed in net.Listen with
// exit 1 (an outage, which a supervisor restarts for ever). metrics_addr
// is now checked by Validate, and --metrics-addr (which bypasses it) by
// drain, before anything is connected: exit 3. NATS_URL points nowhere so
// that a drain that got past the check could not start.
func TestDrainRefusesMalformedMetricsAddrUpFront(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag bare port", []string{"drain", "--metrics-addr", "9091"}, nil},
		{"flag port out of range", []string{"drain", "--metrics-addr", "localhost:99999"}, nil},
		{"config", []string{"drain"}, map[string]string{"AGENTFLEET_METRICS_ADDR": "9091"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"AGENTFLEET_NATS_URL": "nats://127.0.0.1:1"}
			for k, v := range tc.env {
				env[k] = v
			}
			var stderr bytes.Buffer
			code := Run(context.Background(), tc.args, Env{Stderr: &stderr, Lookup: func(k string) (string, bool) {
				v, ok := env[k]
				return v, ok
			}})
			if code != ExitUsage {
				t.Errorf("%v: exit %d, want %d (usage or configuration); stderr:\n%s", tc.args, code, ExitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), "metrics_addr") {
				t.Errorf("%v: the error does not name metrics_addr; stderr:\n%s", tc.args, stderr.String())
			}
		})
	}
}
