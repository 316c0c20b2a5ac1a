package config_test

import (
	"io"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// TestSimFaultsNeedTheSimulatedModel: simulated faults with a real model
// would be ignored (a chaos run against a real provider would inject
// nothing and prove nothing); the configuration is refused instead, by
// flag and by environment, and accepted with model.spec sim.
func TestSimFaultsNeedTheSimulatedModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		ok   bool
	}{
		{"flag with sim", []string{"--sim-faults", "server=0.4"}, nil, true},
		{"tool faults with sim", nil, map[string]string{"AGENTFLEET_MODEL_SIM_TOOL_FAULTS": "0.1"}, true},
		{"flag with gemini", []string{"--model", "gemini:gemini-2.5-flash", "--sim-faults", "server=0.4"}, nil, false},
		{"tool faults with openai", []string{"--model", "openai:gpt-4o-mini"}, map[string]string{"AGENTFLEET_MODEL_SIM_TOOL_FAULTS": "0.1"}, false},
		{"real model without faults", []string{"--model", "openai:gpt-4o-mini"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			_, err := config.LoadWorker(tc.args, lookup, io.Discard)
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "simulated faults apply only to model.spec sim")) {
				t.Fatalf("err = %v, want the simulated faults refused with a real model", err)
			}
		})
	}
}
