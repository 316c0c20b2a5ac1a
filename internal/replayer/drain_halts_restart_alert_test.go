package replayer

import (
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/opsconfig"
)

// Regression (found in review of this session's fix, twenty-third session):
// AgentfleetDLQReplayHalted missed a drain's first halt after a restart at
// the same address, because the drain exported no halts series until that
// halt made it at 1 while the previous drain's series of the same rule was
// recent (increase() 0, and the first-event term found the old samples).
// The drain now creates the series of the rules it counts (auto-halt,
// stores) at 0 when it starts (Metrics.Init).
//
// The test starts a real drain, reads what it exports for the auto-halt
// rule once it has made a pass, and feeds that to promtool: the old drain
// halted once (count 1) and stopped at 30m, the new one starts at 31m and
// halts for the first time at 56m.
func TestDLQReplayHaltedFiresAfterADrainRestart(t *testing.T) {
	bin := os.Getenv("PROMTOOL")
	if bin == "" {
		p, err := osexec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool not installed (set PROMTOOL)")
		}
		bin = p
	}
	x := newFx(t, false)
	d := startDrainWithMetrics(t, x, map[string]string{"AGENTFLEET_DRAIN_INTERVAL": "100ms", "AGENTFLEET_DRAIN_RATE": "0"})
	scrape := func() string { _, m := d.get("/metrics"); return m }
	passRE := regexp.MustCompile(`(?m)^` + MetricPasses + ` [1-9]`)
	eventually(t, "a drain pass", 10*time.Second, func() bool { return passRE.MatchString(scrape()) })
	idle := "_"
	haltRE := regexp.MustCompile(`(?m)^` + MetricHalts + `\{rule="` + RuleAutoHalt + `"\} (\S+)$`)
	page := scrape()
	if m := haltRE.FindStringSubmatch(page); m != nil {
		idle = m[1]
	}
	// The stores rule, the drain's other, the same way.
	if !regexp.MustCompile(`(?m)^` + MetricHalts + `\{rule="` + RuleStores + `"\} 0$`).MatchString(page) {
		t.Errorf("a drain that has not halted does not export %s{rule=%q} at 0", MetricHalts, RuleStores)
	}
	d.stop()

	f, err := opsconfig.LoadRules("../../configs/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var expr string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "AgentfleetDLQReplayHalted" {
				expr = r.Expr
			}
		}
	}
	if expr == "" {
		t.Fatal("no AgentfleetDLQReplayHalted")
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	series := MetricHalts + `{rule="` + RuleAutoHalt + `",job="dlq-replayer",instance="r:9091"}`
	values := fmt.Sprintf("1x29 stale %sx24 1x20", idle)
	body := `tests:
  - interval: 1m
    input_series:
      - series: ` + q(series) + `
        values: ` + q(values) + `
    promql_expr_test:
      - expr: ` + q("count("+expr+")") + `
        eval_time: 54m
        exp_samples: []
      - expr: ` + q("count("+expr+")") + `
        eval_time: 58m
        exp_samples:
          - labels: '{}'
            value: 1
`
	file := filepath.Join(t.TempDir(), "test.yaml")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := osexec.Command(bin, "test", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("AgentfleetDLQReplayHalted does not fire on a drain's first auto-halt after a restart at the same address "+
			"(the previous drain halted within the hour; the new one exports %q for the rule before it): %v\n%s",
			idle, err, strings.TrimSpace(string(out)))
	}
}
