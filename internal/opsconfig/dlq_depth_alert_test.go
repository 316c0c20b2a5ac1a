package opsconfig_test

import "testing"

// Two drain processes (several are safe, the README says) each report the
// whole DLQ: 40 entries that appeared within the hour are 40, not 80, and
// stay under AgentfleetDLQDepthGrowing's 50. (Summed over the processes,
// the depth doubled and the alert fired.)
func TestDLQDepthCountsTheQueueOnceWithTwoDrains(t *testing.T) {
	runRuleTest(t, `
  - interval: 1m
    input_series:
      - series: 'agentfleet_dlq_replayer_passes_total{job="dlq-replayer",instance="r1:9091"}'
        values: '1+1x180'
      - series: 'agentfleet_dlq_replayer_passes_total{job="dlq-replayer",instance="r2:9091"}'
        values: '1+1x180'
      - series: 'agentfleet_dlq_replayer_entries{class="SERVER",replayable="true",job="dlq-replayer",instance="r1:9091"}'
        values: '_x60 40x120'
      - series: 'agentfleet_dlq_replayer_entries{class="SERVER",replayable="true",job="dlq-replayer",instance="r2:9091"}'
        values: '_x60 40x120'
    alert_rule_test:
      - eval_time: 100m
        alertname: AgentfleetDLQDepthGrowing
        exp_alerts: []
`)
}
