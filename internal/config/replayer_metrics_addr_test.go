package config_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, twentieth session): the worker refused a
// malformed metrics_addr (a bare "9091": exit 2,
// TestMalformedMetricsAddrExitsTwo), but the replayer's Validate did not
// look at its metrics_addr at all. `dlq-replayer drain` (the long-running
// service) with AGENTFLEET_METRICS_ADDR=9091 (or metrics_addr: 9091 in
// configs/dlq-replayer.yaml) passed the configuration check, connected to
// NATS and Redis, checked the stores and the retention, ensured the parked
// stream, and only then failed in net.Listen ("missing port in address")
// with exit 1, the code for an outage, which a supervisor restarts for
// ever, instead of 3 (usage or configuration) up front.
func TestReplayerRefusesMalformedMetricsAddr(t *testing.T) {
	for _, addr := range []string{"9091", "localhost:99999"} {
		env := map[string]string{"AGENTFLEET_METRICS_ADDR": addr}
		c, err := config.LoadReplayer("", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate()
		if err == nil || !strings.Contains(err.Error(), "metrics_addr") {
			t.Errorf("replayer metrics_addr %q: Validate returned %v, want an error naming metrics_addr (the worker refuses it)", addr, err)
		}
	}
}

// The replayer keeps accepting what the worker accepts: empty (disabled),
// :port, host:port and a service name.
func TestReplayerAcceptsWellFormedMetricsAddr(t *testing.T) {
	for _, addr := range []string{"", ":9091", "127.0.0.1:0", "[::1]:9091", "localhost:http"} {
		c := config.DefaultReplayer()
		c.MetricsAddr = addr
		if err := c.Validate(); err != nil {
			t.Errorf("replayer metrics_addr %q: %v", addr, err)
		}
	}
}
