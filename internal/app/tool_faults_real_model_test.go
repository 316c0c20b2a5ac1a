package app_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/support"
)

// Regression (found in review, sixteenth session): TestToolFaultsNeedTheSimulatedProvider: model.sim.tool_faults is a
// setting of the SIMULATED provider ("sim: # SIMULATED provider only" in
// configs/worker.yaml), yet with a real model (gemini:…) the configuration
// validates and OpenStores still wraps the orders service in FaultyOrders:
// simulated failures are injected, unlabelled, into a real-model run (the
// demo header then says only "model gemini:…", and no log line names them).
func TestToolFaultsNeedTheSimulatedProvider(t *testing.T) {
	cfg := config.DefaultWorker()
	cfg.Embedded.Enabled = true
	cfg.Model.Spec = "gemini:gemini-2.5-flash"
	cfg.Model.Sim.ToolFaults = 0.5
	if err := cfg.Validate(); err != nil {
		return // refused as a configuration error: fine
	}
	js, _, _ := natstest.JetStream(t)
	st, err := app.OpenStores(context.Background(), cfg, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, faulty := st.Orders.(*support.FaultyOrders); faulty {
		t.Errorf("model.spec %q with model.sim.tool_faults=0.5: configuration accepted and the orders service injects simulated faults", cfg.Model.Spec)
	}
}
