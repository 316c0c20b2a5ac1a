package opsconfig_test

import "testing"

// Regression (found in review, seventeenth session): with the first-event
// term asking for any sample in the hour before the window, a worker that
// restarts at the same address and then fails (a deploy that rolled out a
// bad key) did not page when the previous process had AUTH failures within
// the hour: the series came back at 1, increase() was 0 and the term found
// the old samples. A worker now creates its model's failure series at 0
// when it starts (taxonomy Metrics.Init), so the new failure is an
// increase() from 0; and a start at 0 alone pages nobody.
func TestAuthAlertFiresOnAFirstFailureAfterAWorkerRestart(t *testing.T) {
	runRuleTest(t, `
  - interval: 1m
    input_series:
      # AUTH count 3 from the old process until the restart at 60m; the new
      # process exports 0 from its start at 61m, its first AUTH failure at 81m.
      - series: 'agentfleet_model_failures_total{model="m",class="AUTH",channel="thrown",job="worker",instance="w1:9090"}'
        values: '3x59 stale 0x20 1x20'
    alert_rule_test:
      - eval_time: 83m
        alertname: AgentfleetModelAuthFailure
        exp_alerts:
          - exp_labels:
              severity: page
              view: correctness
              model: m
              class: AUTH
            exp_annotations:
              summary: "Model m rejects our credentials (AUTH)"
              description: "1 AUTH failures (401/403) in 10m for model m: a bad or expired API key or a missing permission. Never retried; invocations are dead-lettered for replay after the fix."
              runbook_url: docs/runbook.md#what-paged
  - interval: 1m
    input_series:
      # a worker's first start: the series at 0, no failure
      - series: 'agentfleet_model_failures_total{model="m",class="AUTH",channel="thrown",job="worker",instance="w2:9090"}'
        values: '0x30'
    alert_rule_test:
      - eval_time: 5m
        alertname: AgentfleetModelAuthFailure
        exp_alerts: []
      - eval_time: 25m
        alertname: AgentfleetModelAuthFailure
        exp_alerts: []
`)
}
