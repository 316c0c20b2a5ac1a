package config_test

import (
	"net"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, seventeenth session): 8f12d27 refuses a
// metrics_addr whose port is not a decimal number (exit 2), but the
// address goes to net.Listen, which resolves a service name port
// (":http", "localhost:https"; Go knows these without /etc/services), as
// Prometheus's own --web.listen-address does. Such a configuration started
// the worker before and is refused now.
func TestMetricsAddrWithAServiceNamePortIsValid(t *testing.T) {
	const addr = "127.0.0.1:http"
	if _, err := net.ResolveTCPAddr("tcp", addr); err != nil {
		t.Skipf("this system resolves no service name: %v", err)
	}
	c := config.DefaultWorker()
	c.NATS.URL = "nats://127.0.0.1:4222"
	c.Embedded.Enabled = false
	if err := c.Validate(); err != nil {
		t.Fatalf("the default configuration with a URL is invalid: %v", err)
	}
	c.MetricsAddr = addr
	if err := c.Validate(); err != nil {
		t.Errorf("metrics_addr %q, which net.Listen accepts, is refused: %v", addr, err)
	}
}
