package opsconfig_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// Regression (found in review, sixteenth session): Grafana runs a query variable's "query" (a string, or an object whose
// "query" field holds it); "definition" is only the text its editor shows.
// checkDashboard validates the definition alone, so a variable whose query
// names a metric the code does not export (and so has no values: every
// panel filtered by $model shows nothing) passes as long as the definition
// still reads right.
func TestChecksCatchBogusVariableQuery(t *testing.T) {
	k := knownMetrics(t)
	for path, d := range loadDashboards(t) {
		changed := false
		for i, v := range d.Templating.List {
			if v.Type != "query" || !strings.Contains(v.Definition, "agentfleet_model_calls_total") {
				continue
			}
			b, err := json.Marshal(map[string]string{"query": "label_values(agentfleet_bogus_total, model)", "refId": v.Name})
			if err != nil {
				t.Fatal(err)
			}
			d.Templating.List[i].Query = b
			changed = true
		}
		if !changed {
			t.Fatalf("%s: no query variable over agentfleet_model_calls_total", path)
		}
		probs := checkDashboard(d, k, newUse())
		if !strings.Contains(strings.Join(probs, "\n"), "agentfleet_bogus_total") {
			t.Errorf("%s: a variable whose query is label_values(agentfleet_bogus_total, model) (definition unchanged) is not reported: %q", path, probs)
		}
	}
}
