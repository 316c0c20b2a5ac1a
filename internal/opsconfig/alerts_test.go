package opsconfig_test

// Behavioural checks of configs/prometheus/alerts.yaml and the dashboard's
// "(in range)" stat panels with promtool's rule unit tests. The structural
// checks in opsconfig_test.go prove the names exist; these prove the
// expressions fire (or count) when the condition they describe happens, and
// stay silent in the control cases. promtool comes from $PROMTOOL or PATH
// (Debian: package prometheus); without it these tests skip.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/opsconfig"
)

const dashboardPath = "../../configs/grafana/agentfleet.json"

// promtool returns the promtool binary ($PROMTOOL, else PATH) or skips.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (set PROMTOOL)")
	}
	return p
}

// runRuleTest writes a promtool rule-test file whose rule_files is the
// shipped alerts.yaml and whose tests are the given YAML list items, and
// runs it.
func runRuleTest(t *testing.T, tests string) {
	t.Helper()
	runRuleTestEvery(t, "1m", tests)
}

// runRuleTestEvery is runRuleTest with the given evaluation_interval (the
// groups without their own interval), for tests spanning days.
func runRuleTestEvery(t *testing.T, every, tests string) {
	t.Helper()
	bin := promtool(t)
	abs, err := filepath.Abs(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	body := "rule_files:\n  - " + abs + "\nevaluation_interval: " + every + "\ntests:\n" + tests
	if out, err := promtoolTestRules(t, bin, body); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// promtoolTestRules writes a promtool rule-test file holding body and runs
// `promtool test rules` on it.
func promtoolTestRules(t *testing.T, bin, body string) ([]byte, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "test.yaml")
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return exec.Command(bin, "test", "rules", f).CombinedOutput()
}

// The DLQ is normally empty, and dlq-replayer drain then exports no
// agentfleet_dlq_replayer_entries series at all (drainPass: Entries.Reset()
// and one child per class present), only its unlabelled
// agentfleet_dlq_replayer_passes_total. An outage that puts 300 entries in
// the DLQ and keeps them there is what AgentfleetDLQDepthGrowing describes
// ("holds over 50 more entries than an hour ago"): the depth an hour ago
// counts as 0 because a drain process was scraped then. Controls: a drain
// deployed onto an existing backlog (no drain an hour ago: no comparison), a
// steady depth, and a DLQ that stays empty do not fire.
func TestDLQDepthGrowingFiresFromAnEmptyDLQ(t *testing.T) {
	const annotations = `
            exp_annotations:
              summary: "DLQ depth grew by 300 entries in 1h"
              description: "The dead-letter queue holds over 50 more entries than an hour ago and the drain does not keep up. Check dlq-replayer stats for the classes and whether the cooldown pauses replays."
              runbook_url: docs/runbook.md#dlq-growth
`
	runRuleTest(t, `
  - interval: 1m
    input_series:
      # a drain process throughout; the DLQ empty (no entries series) for
      # 60 minutes, then 300 SERVER entries that stay
      - series: 'agentfleet_dlq_replayer_passes_total{job="dlq-replayer",instance="r:9091"}'
        values: '1+1x180'
      - series: 'agentfleet_dlq_replayer_entries{class="SERVER",replayable="true",job="dlq-replayer",instance="r:9091"}'
        values: '_x60 300x120'
    alert_rule_test:
      - eval_time: 100m
        alertname: AgentfleetDLQDepthGrowing
        exp_alerts:
          - exp_labels:
              severity: warning`+annotations+`
  - interval: 1m
    input_series:
      # control: the drain starts at 60m on a DLQ that already holds 300
      - series: 'agentfleet_dlq_replayer_passes_total{job="dlq-replayer",instance="r:9091"}'
        values: '_x60 1+1x120'
      - series: 'agentfleet_dlq_replayer_entries{class="SERVER",replayable="true",job="dlq-replayer",instance="r:9091"}'
        values: '_x60 300x120'
    alert_rule_test:
      - eval_time: 100m
        alertname: AgentfleetDLQDepthGrowing
        exp_alerts: []
      - eval_time: 170m
        alertname: AgentfleetDLQDepthGrowing
        exp_alerts: []
  - interval: 1m
    input_series:
      # controls: a steady depth, and an empty DLQ that stays empty
      - series: 'agentfleet_dlq_replayer_passes_total{job="dlq-replayer",instance="r:9091"}'
        values: '1+1x180'
      - series: 'agentfleet_dlq_replayer_entries{class="SERVER",replayable="true",job="dlq-replayer",instance="r:9091"}'
        values: '300x180'
    alert_rule_test:
      - eval_time: 100m
        alertname: AgentfleetDLQDepthGrowing
        exp_alerts: []
  - interval: 1m
    input_series:
      - series: 'agentfleet_dlq_replayer_passes_total{job="dlq-replayer",instance="r:9091"}'
        values: '1+1x180'
    alert_rule_test:
      - eval_time: 100m
        alertname: AgentfleetDLQDepthGrowing
        exp_alerts: []
`)
}

// A drain process's first safety halt of a rule creates the
// agentfleet_dlq_replayer_halts_total{rule} series with the value 1:
// increase() over it is 0, and the "unless ... offset" term catches it. A
// later halt of the same rule is an increase; an old halt with none since
// (the control) does not fire.
func TestDLQReplayHaltedFiresOnTheFirstHalt(t *testing.T) {
	const alert = `
        exp_alerts:
          - exp_labels:
              severity: warning
              rule: auto-halt
            exp_annotations:
              summary: "DLQ replay halted by safety rule auto-halt"
              description: "The drain stopped replaying because the safety rule auto-halt tripped: auto-halt (replays failing again: look at the replay results before resuming) or stores (the workers record other stores than the drain opened). The runbook's DLQ growth section says what to do for each."
              runbook_url: docs/runbook.md#dlq-growth
`
	runRuleTest(t, `
  - interval: 1m
    input_series:
      - series: 'agentfleet_dlq_replayer_halts_total{rule="auto-halt",job="dlq-replayer",instance="r:9091"}'
        values: '_x10 1x30'
    alert_rule_test:
      - eval_time: 15m
        alertname: AgentfleetDLQReplayHalted`+alert+`
  - interval: 1m
    input_series:
      - series: 'agentfleet_dlq_replayer_halts_total{rule="auto-halt",job="dlq-replayer",instance="r:9091"}'
        values: '1x30 2x30'
    alert_rule_test:
      - eval_time: 20m
        alertname: AgentfleetDLQReplayHalted
        exp_alerts: []
      - eval_time: 35m
        alertname: AgentfleetDLQReplayHalted`+alert)
}

// A worker's first UNKNOWN failure of a model creates the series at 1, and
// a single novel failure in a week is the case the weekly review exists
// for: the "unless ... offset 7d" term opens the ticket. The control: a
// failure older than the week, with none since, opens none.
func TestUnknownReviewFiresOnASingleFailure(t *testing.T) {
	runRuleTest(t, `
  - interval: 1m
    input_series:
      - series: 'agentfleet_model_failures_total{model="gemini-2.5-flash",class="UNKNOWN",channel="thrown",job="worker",instance="w1:9090"}'
        values: '_x30 1x300'
    alert_rule_test:
      - eval_time: 3h
        alertname: AgentfleetUnknownFailuresWeeklyReview
        exp_alerts:
          - exp_labels:
              severity: ticket
              view: reliability
              model: gemini-2.5-flash
              channel: thrown
            exp_annotations:
              summary: "1 UNKNOWN failures of gemini-2.5-flash (thrown) in the last 7 days"
              description: "Failures no rule recognised. Review them weekly (the raw messages are in the logs and DLQ entries) and promote recurring patterns to named classes in pkg/taxonomy."
              runbook_url: docs/runbook.md#unknown-review
`)
	runRuleTestEvery(t, "1h", `
  - interval: 1h
    input_series:
      - series: 'agentfleet_model_failures_total{model="gemini-2.5-flash",class="UNKNOWN",channel="thrown",job="worker",instance="w1:9090"}'
        values: '1x200'
    alert_rule_test:
      - eval_time: 190h
        alertname: AgentfleetUnknownFailuresWeeklyReview
        exp_alerts: []
`)
}

// inRangeSeries is, per "(in range)" stat panel of the dashboard, a series
// its expression counts.
var inRangeSeries = map[string]string{
	"BAD_REQUEST (in range)":            `agentfleet_model_failures_total{model="gemini-2.5-flash",class="BAD_REQUEST",channel="thrown",job="worker",instance="%s"}`,
	"AUTH (in range)":                   `agentfleet_model_failures_total{model="gemini-2.5-flash",class="AUTH",channel="thrown",job="worker",instance="%s"}`,
	"NOT_FOUND (in range)":              `agentfleet_model_failures_total{model="gemini-2.5-flash",class="NOT_FOUND",channel="thrown",job="worker",instance="%s"}`,
	"CALL_BUDGET (in range)":            `agentfleet_loop_suspected_total{agent="support",job="worker",instance="%s"}`,
	"BAD_INPUT dead letters (in range)": `agentfleet_dead_letters_total{class="BAD_INPUT",agent="support",job="worker",instance="%s"}`,
	"Lease lost (in range)":             `agentfleet_idempotency_lease_lost_total{agent="support",tool="refund_order",job="worker",instance="%s"}`,
	"Args mismatch (in range)":          `agentfleet_idempotency_args_mismatch_total{agent="support",tool="refund_order",job="worker",instance="%s"}`,
}

// The dashboard's "(in range)" stat panels count events in the dashboard's
// time range ("Red at any value above 0": for Lease lost, the effect may
// have run twice). A worker's first event creates its labelled counter at
// 1, which increase() reads as 0; the panels add the series that did not
// exist at the start of the range with their whole value. Checked for
// every such panel, with $__range = 1h: a first event counts 1, an old
// series without events 0, no series at all 0, and a first event on one
// worker plus an increase on another about 2.
func TestInRangeStatsCountTheFirstEvent(t *testing.T) {
	bin := promtool(t)
	d, err := opsconfig.LoadDashboard(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("${__range}", "1h", "$__range", "1h", "$model", ".*", "$agent", ".*")
	seen := 0
	for _, p := range d.AllPanels() {
		if p.Type != "stat" || !strings.Contains(p.Title, "(in range)") {
			continue
		}
		series, ok := inRangeSeries[p.Title]
		if !ok {
			t.Errorf("stat panel %q: no series in inRangeSeries to test it with", p.Title)
			continue
		}
		if len(p.Targets) != 1 {
			t.Errorf("stat panel %q: %d targets, want 1", p.Title, len(p.Targets))
			continue
		}
		seen++
		t.Run(p.Title, func(t *testing.T) {
			runStatTest(t, bin, vars.Replace(p.Targets[0].Expr), series)
		})
	}
	if seen != len(inRangeSeries) {
		t.Errorf("%d \"(in range)\" stat panels tested, want %d", seen, len(inRangeSeries))
	}
}

// The Lease lost stat counts a worker's first lost lease (the case the
// review found; TestInRangeStatsCountTheFirstEvent covers every panel).
func TestLeaseLostStatCountsTheFirstLoss(t *testing.T) {
	bin := promtool(t)
	d, err := opsconfig.LoadDashboard(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.AllPanels() {
		if p.Title == "Lease lost (in range)" {
			expr := strings.NewReplacer("$__range", "1h", "$agent", ".*").Replace(p.Targets[0].Expr)
			runStatTest(t, bin, expr, inRangeSeries[p.Title])
			return
		}
	}
	t.Fatal(`no "Lease lost (in range)" panel`)
}

// runStatTest runs promtool's expression tests of a stat panel's
// expression (its Grafana variables replaced, $__range by 1h) over series,
// a series selector with a %s for the instance.
func runStatTest(t *testing.T, bin, expr, series string) {
	t.Helper()
	q := func(s string) string {
		b, err := json.Marshal(s) // a JSON string is a YAML double-quoted scalar
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	w1, w2 := q(fmt.Sprintf(series, "w1:9090")), q(fmt.Sprintf(series, "w2:9090"))
	body := `tests:
  - interval: 1m
    input_series:
      # w1's first event at 10m
      - series: ` + w1 + `
        values: '_x10 1x60'
    promql_expr_test:
      - expr: ` + q(expr) + `
        eval_time: 30m
        exp_samples:
          - labels: '{}'
            value: 1
  - interval: 1m
    input_series:
      # w1's event was more than an hour ago; w2 has had none
      - series: ` + w1 + `
        values: '1x120'
      - series: 'up{job="worker",instance="w2:9090"}'
        values: '1x120'
    promql_expr_test:
      - expr: ` + q(expr) + `
        eval_time: 90m
        exp_samples:
          - labels: '{}'
            value: 0
  - interval: 1m
    input_series:
      # no worker has ever had one: no series
      - series: 'up{job="worker",instance="w1:9090"}'
        values: '1x120'
    promql_expr_test:
      - expr: ` + q(expr) + `
        eval_time: 30m
        exp_samples:
          - labels: '{}'
            value: 0
  - interval: 1m
    input_series:
      # w1's second event at 51m, w2's first at 60m (increase() of w1 is
      # extrapolated: 60/59)
      - series: ` + w1 + `
        values: '1x50 2x70'
      - series: ` + w2 + `
        values: '_x60 1x60'
    promql_expr_test:
      - expr: ` + q("round("+expr+")") + `
        eval_time: 90m
        exp_samples:
          - labels: '{}'
            value: 2
`
	if out, err := promtoolTestRules(t, bin, body); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\nexpression: %s", err, out, expr)
	}
}
