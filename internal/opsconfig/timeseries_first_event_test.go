package opsconfig_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/opsconfig"
)

// Regression (found in review, sixteenth session): The correctness view's timeseries panels draw events with
// increase(counter[$__rate_interval]). A worker's first event of a labelled
// counter creates the series at 1, which increase() reads as 0, so a single
// BAD_REQUEST, or an agent's first (often only) suspected loop on a worker,
// is drawn as 0: "Correctness: our bugs and misconfiguration (any non-zero
// is a bug)" shows nothing. This is the first-event defect the README says
// was fixed for the "(in range)" stat panels ("showed 0 for a first event.
// All are fixed"); the timeseries next to them still have it. Evaluated with
// promtool like TestInRangeStatsCountTheFirstEvent ($__rate_interval = 5m,
// as ExpandGrafanaVars): a first event at 10m must be drawn above 0 at 12m.
func TestCorrectnessTimeseriesShowTheFirstEvent(t *testing.T) {
	bin := promtool(t)
	d, err := opsconfig.LoadDashboard(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		title, ref, series, labels string
	}{
		{"Correctness failures by class and model", "A",
			`agentfleet_model_failures_total{model="gemini-2.5-flash",class="BAD_REQUEST",channel="thrown",job="worker",instance="w1:9090"}`,
			`{class="BAD_REQUEST",model="gemini-2.5-flash"}`},
		{"Page events and loops suspected, by agent", "A",
			`agentfleet_page_events_total{class="AUTH",agent="support",job="worker",instance="w1:9090"}`,
			`{class="AUTH",agent="support"}`},
		{"Page events and loops suspected, by agent", "B",
			`agentfleet_loop_suspected_total{agent="support",job="worker",instance="w1:9090"}`,
			`{agent="support"}`},
	}
	vars := strings.NewReplacer("${__rate_interval}", "5m", "$__rate_interval", "5m", "$model", ".*", "$agent", ".*")
	q := func(s string) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range cases {
		t.Run(tc.title+" "+tc.ref, func(t *testing.T) {
			expr := ""
			for _, p := range d.AllPanels() {
				if p.Title != tc.title {
					continue
				}
				for _, tg := range p.Targets {
					if tg.RefID == tc.ref {
						expr = vars.Replace(tg.Expr)
					}
				}
			}
			if expr == "" {
				t.Fatalf("no panel %q target %s", tc.title, tc.ref)
			}
			body := `tests:
  - interval: 1m
    input_series:
      # the worker's first event at 10m
      - series: ` + q(tc.series) + `
        values: '_x10 1x60'
    promql_expr_test:
      - expr: ` + q("("+expr+") > bool 0") + `
        eval_time: 12m
        exp_samples:
          - labels: '` + tc.labels + `'
            value: 1
`
			if out, err := promtoolTestRules(t, bin, body); err != nil {
				t.Errorf("panel %q %s draws a worker's first event as 0: %v\n%s\nexpression: %s", tc.title, tc.ref, err, out, expr)
			}
		})
	}
}
