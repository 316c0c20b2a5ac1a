package opsconfig_test

import "testing"

// Regression (found in review, twenty-third session):
// AgentfleetDLQWaitingForPerson held `for: 24h` on the raw entries gauge,
// so one evaluation without the series (a failed scrape of the drain, or a
// drain restarted by a deploy, which exports no entries series until its
// first pass) reset the 24h and the ticket practically never fired. It is
// now held on the highest count of the last 10m. Four AUTH entries wait for
// 25h, with one failed scrape after 11h40m: the ticket is raised. Control:
// entries waiting 20h do not raise it.
func TestDLQWaitingForPersonSurvivesOneFailedScrape(t *testing.T) {
	runRuleTest(t, `
  - interval: 1m
    input_series:
      - series: 'agentfleet_dlq_replayer_passes_total{job="dlq-replayer",instance="r:9091"}'
        values: '1+1x1600'
      - series: 'agentfleet_dlq_replayer_entries{class="AUTH",replayable="false",job="dlq-replayer",instance="r:9091"}'
        values: '4x700 stale 4x900'
    alert_rule_test:
      - eval_time: 1500m
        alertname: AgentfleetDLQWaitingForPerson
        exp_alerts:
          - exp_labels:
              severity: ticket
              class: AUTH
            exp_annotations:
              summary: "4 AUTH DLQ entries have waited for a person for a day"
              description: "Entries of classes that are never replayed automatically have stayed in the DLQ for 24h. Fix the cause, then replay them by hand (dlq-replayer show, replay --dry-run, --canary)."
              runbook_url: docs/runbook.md#dlq-growth
  - interval: 1m
    input_series:
      # control: 20h of waiting
      - series: 'agentfleet_dlq_replayer_entries{class="AUTH",replayable="false",job="dlq-replayer",instance="r:9091"}'
        values: '_x300 4x1300'
    alert_rule_test:
      - eval_time: 1500m
        alertname: AgentfleetDLQWaitingForPerson
        exp_alerts: []
`)
}
