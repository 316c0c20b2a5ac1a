package app_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/app"
)

// Regression (found in review, sixteenth session): TestDemoHeaderNamesToolFaults: with model.sim.tool_faults set (here
// every orders-service call fails, simulated), the demo's header shows only
// the model's fault spec (faults: "") and nothing in the output says that
// simulated tool faults were injected: the run reads as a fault-free one
// that completed every request and refunded nothing.
func TestDemoHeaderNamesToolFaults(t *testing.T) {
	cfg := fastConfig(t)
	cfg.Model.Sim.ToolFaults = 1
	var out bytes.Buffer
	if _, err := app.RunDemo(context.Background(), cfg, 1, os.Getenv, &out, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	header, _, _ := strings.Cut(out.String(), "\n")
	if !strings.Contains(strings.ToLower(out.String()), "tool fault") {
		t.Errorf("demo output does not mention the simulated tool faults (model.sim.tool_faults=1); header: %q\n%s", header, out.String())
	}
}
