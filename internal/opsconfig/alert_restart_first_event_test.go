package opsconfig_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/opsconfig"
	"github.com/agentfleet/agentfleet/internal/support"
)

// workerStartSeries starts a real worker (NATS KV stores, embedded test
// server) and returns the series its registry exposes at start, as
// "name{k="v",...}" -> value, so the scenarios below feed promtool what a
// restarted worker really exports.
func workerStartSeries(t *testing.T) map[string]float64 {
	t.Helper()
	s := natstest.RunServer(t)
	cfg := config.DefaultWorker()
	cfg.NATS.URL = s.ClientURL()
	cfg.Embedded.Enabled = false
	cfg.Redis.URL = ""
	cfg.MetricsAddr = ""
	cfg.Worker.Name = "w-restart-first-event"
	cfg.Model.Sim.Latency = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	r, err := app.StartWorker(ctx, cfg, func(string) string { return "" }, io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = r.Wait() })
	mfs, err := r.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[seriesKey(mf.GetName(), m)] = seriesValue(m)
		}
	}
	return out
}

func seriesKey(name string, m *dto.Metric) string {
	var parts []string
	for _, lp := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func seriesValue(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return -1
}

// Regression (found in review, twenty-third session): the first event after
// a worker restart at the same address (loop suspected, lease lost,
// BAD_INPUT, unknown tool call) never alerted when the previous process had
// counted the same labels within the hour before the window. Only
// taxonomy's series were created at start: the others came back at 1, so
// increase() over the window was 0 (one value) and the first-event term
// found the old process's samples. A worker now creates its agents' loop,
// dead-letter and idempotency series at 0 when it starts (worker and
// idempotency Metrics.Init), and the unknown-tool alert, whose tool names
// cannot be known at start, has terms of its own for a restart. The old
// process counts 3 for 30m and stops; the new one starts at 31m and has its
// first event more than the alert's window after the restart.
func TestFirstEventAlertsFireAfterAWorkerRestart(t *testing.T) {
	bin := promtool(t)
	start := workerStartSeries(t)
	f, err := opsconfig.LoadRules(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	exprOf := func(alert string) string {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert == alert {
					return r.Expr
				}
			}
		}
		t.Fatalf("no alert %s", alert)
		return ""
	}
	q := func(s string) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		alert  string
		series string // the exported series, as the worker's registry names it
		window int    // the alert's window in minutes
	}{
		{"AgentfleetLoopSuspected", `agentfleet_loop_suspected_total{agent="support"}`, 15},
		{"AgentfleetIdempotencyLeaseLost", `agentfleet_idempotency_lease_lost_total{agent="support",tool="` + support.RefundOrderTool + `"}`, 15},
		{"AgentfleetBadInput", `agentfleet_dead_letters_total{agent="support",class="BAD_INPUT"}`, 60},
		{"AgentfleetUnknownToolCalled", `agentfleet_unknown_tool_calls_total{agent="support",tool="lookup_order"}`, 15},
	}
	for _, tc := range cases {
		t.Run(tc.alert, func(t *testing.T) {
			// What the restarted process exports before its first event.
			idle := "_"
			if v, ok := start[tc.series]; ok {
				idle = fmt.Sprint(v)
			}
			// The old process counts 3 for 30m and stops (stale at 30m);
			// the new one starts at 31m and has its first event W+10
			// minutes later (more than the window after the restart).
			restart := 31
			event := restart + tc.window + 10
			values := fmt.Sprintf("3x29 stale %sx%d 1x20", idle, event-restart-1)
			scraped := strings.Replace(tc.series, "{", `{job="worker",instance="w1:9090",`, 1)
			body := `tests:
  - interval: 1m
    input_series:
      - series: ` + q(scraped) + `
        values: ` + q(values) + `
    promql_expr_test:
      - expr: ` + q("count("+exprOf(tc.alert)+")") + `
        eval_time: ` + fmt.Sprintf("%dm", event-2) + `
        exp_samples: []
      - expr: ` + q("count("+exprOf(tc.alert)+")") + `
        eval_time: ` + fmt.Sprintf("%dm", event+2) + `
        exp_samples:
          - labels: '{}'
            value: 1
`
			if out, err := promtoolTestRules(t, bin, body); err != nil {
				t.Errorf("%s does not fire on the first event after a worker restart at the same address "+
					"(the previous process counted the same labels within the hour; the new one exports %s before it): %v\n%s",
					tc.alert, map[bool]string{true: "nothing", false: "0"}[idle == "_"], err, out)
			}
		})
	}
}

// The unknown-tool alert after a worker restart whose first call brings the
// count back to the previous process's (1 before, 1 after), which the
// lower-count term cannot see: a restart before the window (the series is
// absent when the worker was scraped at the window's start) and a restart
// within it (the process started less than 15m ago) still alert, and a
// failed scrape alone (staleness markers on every series of the target)
// does not.
func TestUnknownToolAlertFiresAfterARestartAtTheSameCount(t *testing.T) {
	const alert = `
        exp_alerts:
          - exp_labels:
              severity: warning
              view: correctness
              agent: support
              tool: lookup_order
            exp_annotations:
              summary: "Agent support called the unknown tool lookup_order"
              description: "1 calls in 15m of a tool support does not have: a renamed or removed tool that the prompt or stored sessions still name. Deploy the tool under its old name too, or fix the prompt."
              runbook_url: docs/runbook.md#unknown-tool
`
	runRuleTest(t, `
  - interval: 1m
    input_series:
      # restart at 31m, first call at 56m (more than 15m later)
      - series: 'agentfleet_unknown_tool_calls_total{agent="support",tool="lookup_order",job="worker",instance="w1:9090"}'
        values: '1x29 stale _x25 1x20'
      - series: 'agentfleet_worker_in_flight{job="worker",instance="w1:9090"}'
        values: '0x29 stale 0x45'
      - series: 'process_start_time_seconds{job="worker",instance="w1:9090"}'
        values: '0x29 stale 1860x45'
    alert_rule_test:
      - eval_time: 54m
        alertname: AgentfleetUnknownToolCalled
        exp_alerts: []
      - eval_time: 58m
        alertname: AgentfleetUnknownToolCalled`+alert+`
  - interval: 1m
    input_series:
      # restart at 31m, first call at 33m (within the window)
      - series: 'agentfleet_unknown_tool_calls_total{agent="support",tool="lookup_order",job="worker",instance="w1:9090"}'
        values: '1x29 stale _x2 1x30'
      - series: 'agentfleet_worker_in_flight{job="worker",instance="w1:9090"}'
        values: '0x29 stale 0x45'
      - series: 'process_start_time_seconds{job="worker",instance="w1:9090"}'
        values: '0x29 stale 1860x45'
    alert_rule_test:
      - eval_time: 32m
        alertname: AgentfleetUnknownToolCalled
        exp_alerts: []
      - eval_time: 35m
        alertname: AgentfleetUnknownToolCalled`+alert+`
      - eval_time: 47m
        alertname: AgentfleetUnknownToolCalled`+alert+`
      - eval_time: 49m
        alertname: AgentfleetUnknownToolCalled
        exp_alerts: []
  - interval: 1m
    input_series:
      # control: one failed scrape at 31m, no call
      - series: 'agentfleet_unknown_tool_calls_total{agent="support",tool="lookup_order",job="worker",instance="w1:9090"}'
        values: '1x30 stale 1x30'
      - series: 'agentfleet_worker_in_flight{job="worker",instance="w1:9090"}'
        values: '0x30 stale 0x30'
      - series: 'process_start_time_seconds{job="worker",instance="w1:9090"}'
        values: '0x30 stale 0x30'
    alert_rule_test:
      - eval_time: 20m
        alertname: AgentfleetUnknownToolCalled
        exp_alerts: []
      - eval_time: 46m
        alertname: AgentfleetUnknownToolCalled
        exp_alerts: []
      - eval_time: 47m
        alertname: AgentfleetUnknownToolCalled
        exp_alerts: []
`)
}
