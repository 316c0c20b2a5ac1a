package opsconfig_test

import "testing"

// Regression (found in review of this session's fix, twenty-third session):
// the unknown-tool alert's term for a worker restarted within the window
// (any series of a process that started less than 15m ago) fired for up to
// 5 minutes with no unknown tool called when Prometheus restarted across
// the worker's restart. With no scrape cache, Prometheus writes no
// staleness markers, so the previous process's last count stays the
// series' value beside the new process's start time; the term now keeps
// only samples scraped after that process started.
func TestUnknownToolAlertSilentWhenPrometheusAndWorkerRestartTogether(t *testing.T) {
	runRuleTest(t, `
  - interval: 1m
    input_series:
      # the old process's count, last scraped at 30m; Prometheus and the
      # worker restart at 31m; no staleness marker (no scrape cache), and
      # the new process has no unknown-tool series (no call)
      - series: 'agentfleet_unknown_tool_calls_total{agent="support",tool="lookup_order",job="worker",instance="w1:9090"}'
        values: '3x30'
      - series: 'agentfleet_worker_in_flight{job="worker",instance="w1:9090"}'
        values: '0x30 _ 0x40'
      - series: 'process_start_time_seconds{job="worker",instance="w1:9090"}'
        values: '0x30 _ 1860x40'
    alert_rule_test:
      - eval_time: 33m
        alertname: AgentfleetUnknownToolCalled
        exp_alerts: []
      - eval_time: 35m
        alertname: AgentfleetUnknownToolCalled
        exp_alerts: []
`)
}
