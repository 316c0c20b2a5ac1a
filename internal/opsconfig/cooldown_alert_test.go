package opsconfig_test

import (
	"strings"
	"testing"
)

// AgentfleetModelCooldownOpen fires on a model kept in cooldown, or put in
// it again within 3m each time, for 5m. A cooldown lasts cooldown.duration (30s by default)
// and cannot be renewed back to back: while it is open nothing is counted,
// and opening it empties the window (cooldown.Store.Record: "only MinCalls
// new attempts can open it again"), so after every 30s the gauge is 0 on
// every worker until min_calls (20) new attempts have failed. In a provider
// hang those attempts each take model.retry.attempt_timeout (2m by
// default) to fail, so a sustained outage shows as 30s open / ~2m closed,
// cycle after cycle. Modelled here over 2h at a 15s scrape: the model is
// put in cooldown ~48 times and workers never get a successful call: the
// alert must fire. (As `max by (model) (agentfleet_cooldown_open) == 1` it
// never did: `for: 5m` reset on every closed gap.)
func TestCooldownOpenAlertFiresDuringASustainedOutage(t *testing.T) {
	// 15s samples: 2 open (30s) then 8 closed (120s), repeated.
	cycle := strings.Repeat("1 ", 2) + strings.Repeat("0 ", 8)
	values := strings.TrimSpace(strings.Repeat(cycle, 48))
	runRuleTest(t, `
  - interval: 15s
    input_series:
      - series: 'agentfleet_cooldown_open{model="gemini-2.5-flash",job="worker",instance="w1:9090"}'
        values: '`+values+`'
    alert_rule_test:
      - eval_time: 100m
        alertname: AgentfleetModelCooldownOpen
        exp_alerts:
          - exp_labels:
              severity: warning
              view: reliability
              model: gemini-2.5-flash
            exp_annotations:
              summary: "gemini-2.5-flash is in fleet-wide cooldown"
              description: "The per-model circuit breaker has kept gemini-2.5-flash in cooldown, or opened it again within 3m each time, for 5m: workers do not call it while it is open and the replayer pauses its replays."
              runbook_url: docs/runbook.md#transient-failures
`)
}

// One cooldown, or two a quarter of an hour apart, is not an outage: the
// alert stays silent.
func TestCooldownOpenAlertSilentForIsolatedCooldowns(t *testing.T) {
	// 15s samples: open 30s at 10m and again at 25m, closed otherwise.
	v := make([]string, 0, 160)
	for i := range 160 {
		if i == 40 || i == 41 || i == 100 || i == 101 {
			v = append(v, "1")
		} else {
			v = append(v, "0")
		}
	}
	runRuleTest(t, `
  - interval: 15s
    input_series:
      - series: 'agentfleet_cooldown_open{model="gemini-2.5-flash",job="worker",instance="w1:9090"}'
        values: '`+strings.Join(v, " ")+`'
    alert_rule_test:
      - eval_time: 15m
        alertname: AgentfleetModelCooldownOpen
        exp_alerts: []
      - eval_time: 30m
        alertname: AgentfleetModelCooldownOpen
        exp_alerts: []
`)
}
