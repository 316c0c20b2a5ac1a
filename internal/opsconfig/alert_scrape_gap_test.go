package opsconfig_test

import "testing"

// Regression (found in review, seventeenth session): The "any increase" alerts add a "new series" term, A unless A offset 10m,
// so a first event (a counter created at 1) fires. But "A offset 10m" is
// also empty whenever the series merely had no sample within the 5m
// look-back 10 minutes ago: a single failed scrape of a worker (Prometheus
// writes staleness markers for all of the target's series) or a scrape gap
// over 5m (a Prometheus restart, a network partition). Ten minutes later
// every old series looks new, and an AUTH counter untouched for hours pages
// on-call at once (the rule has no `for:`). The same idiom is in every
// first-event alert (NOT_FOUND, BAD_REQUEST, loops, BAD_INPUT, quota, replay
// halts, lease lost, the UNKNOWN review) and in the "(in range)" panels.
func TestPageAlertSilentAfterAScrapeFailure(t *testing.T) {
	runRuleTest(t, `
  - interval: 1m
    input_series:
      # one AUTH failure long ago, none since; one failed scrape at 61m
      - series: 'agentfleet_model_failures_total{model="m",class="AUTH",channel="thrown",job="worker",instance="w1:9090"}'
        values: '1x60 stale 1x60'
    alert_rule_test:
      - eval_time: 71m
        alertname: AgentfleetModelAuthFailure
        exp_alerts: []
  - interval: 1m
    input_series:
      # the same, with a 7-minute scrape gap (Prometheus restarted)
      - series: 'agentfleet_model_failures_total{model="m",class="AUTH",channel="thrown",job="worker",instance="w1:9090"}'
        values: '1x60 _x7 1x60'
    alert_rule_test:
      - eval_time: 76m
        alertname: AgentfleetModelAuthFailure
        exp_alerts: []
`)
}
