package opsconfig_test

import "testing"

// Regression (found in review, sixteenth session): Label values other than class are not checked at all. The replayer sets
// agentfleet_dlq_replayer_entries{replayable} to "true" or "false"
// (internal/replayer/drain.go, drainPass), and the taxonomy sets
// agentfleet_model_failures_total{channel} to "thrown" or "in_band"
// (taxonomy.ChannelThrown / ChannelInBand). A matcher with a value the code
// never sets selects nothing, so the alert can never fire / the panel is
// empty; checkExpr accepts it because only the class label's values are
// compared with the code.
func TestChecksCatchWrongLabelValue(t *testing.T) {
	k := knownMetrics(t)
	for name, expr := range map[string]string{
		"replayable=no (AgentfleetDLQWaitingForPerson never fires)": `max by (class) (agentfleet_dlq_replayer_entries{replayable="no"}) > 0`,
		"channel=inband (in-band failures never selected)":          `sum by (model) (rate(agentfleet_model_failures_total{channel="inband"}[5m]))`,
	} {
		t.Run(name, func(t *testing.T) {
			if probs := checkExpr("test", expr, k, newUse()); len(probs) == 0 {
				t.Errorf("checkExpr accepts %s: a label value the code never exports is not reported", expr)
			}
		})
	}
}
