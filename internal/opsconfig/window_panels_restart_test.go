package opsconfig_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/opsconfig"
)

// Regression (found in review, sixteenth session): The timeseries over long windows (UNKNOWN weekly review 7d, DLQ entries
// 1h/24h, blocked and truncated per hour) now read a series that did not
// exist one window ago as its raw counter value ("X unless X offset d").
// That value only counts the events since the worker's last restart: a
// worker restart (a deploy) resets the counter, and every event the series
// counted before the restart vanishes from the panel, where increase()
// counted them across the reset. Five UNKNOWN failures on a worker, then a
// restart (the counter starts again at 1 with the next one): the weekly
// review must show at least the five, not 1.
func TestWindowPanelsCountEventsBeforeAWorkerRestart(t *testing.T) {
	bin := promtool(t)
	d, err := opsconfig.LoadDashboard(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	const title, ref = "UNKNOWN failures (weekly review)", "A"
	expr := ""
	for _, p := range d.AllPanels() {
		if p.Title != title {
			continue
		}
		for _, tg := range p.Targets {
			if tg.RefID == ref {
				expr = strings.NewReplacer("$model", ".*").Replace(tg.Expr)
			}
		}
	}
	if expr == "" {
		t.Fatalf("no panel %q target %s", title, ref)
	}
	q := func(s string) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	body := `tests:
  - interval: 1m
    input_series:
      # first failure at 10m, five by 14m; the worker restarts and fails once more at 15m
      - series: ` + q(`agentfleet_model_failures_total{model="m",class="UNKNOWN",channel="thrown",job="worker",instance="w1:9090"}`) + `
        values: '_x10 1 2 3 4 5 1x30'
    promql_expr_test:
      - expr: ` + q("("+expr+") >= bool 5") + `
        eval_time: 40m
        exp_samples:
          - labels: '{model="m",channel="thrown"}'
            value: 1
`
	if out, err := promtoolTestRules(t, bin, body); err != nil {
		t.Errorf("panel %q %s loses the events counted before a worker restart: %v\n%s\nexpression: %s", title, ref, err, out, expr)
	}
}
