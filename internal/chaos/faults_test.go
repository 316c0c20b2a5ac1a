package chaos

import (
	"slices"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/providers/sim"
)

// Every fault class the simulated provider knows has a row in
// faultEndings (a new one must be thought through, not allowed by
// default), and the default spec's transient faults end invocations with
// their own classes only.
func TestFailureClassesOfTheFaultSpec(t *testing.T) {
	for _, c := range sim.FaultClasses {
		if _, ok := faultEndings[c]; !ok {
			t.Errorf("simulated fault class %s has no row in faultEndings", c)
		}
	}
	for spec, want := range map[string][]string{
		DefaultConfig().ModelFaults:          {"RATE_LIMITED", "SERVER", "TIMEOUT"},
		"none":                               {},
		"quota=0.1,transport=0.1":            {"QUOTA_EXHAUSTED", "TRANSPORT"},
		"output_blocked=0.2,truncated=0.2":   {},
		"malformed_function_call=0.3":        {"CALL_BUDGET"},
		"server=0,malformed_function_call=1": {"CALL_BUDGET"},
	} {
		got, err := failureClasses(spec)
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		if names := classNames(got); !slices.Equal(names, want) {
			t.Errorf("%q: classes %v, want %v", spec, names, want)
		}
	}
	if _, err := failureClasses("server=2"); err == nil {
		t.Errorf("an invalid spec gives classes")
	}
	if err := (Config{ModelFaults: "sever=0.2"}).WithDefaults().Validate(); err == nil {
		t.Errorf("a config with a misspelt fault class validates")
	}
}
