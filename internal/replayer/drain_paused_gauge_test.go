package replayer

import (
	"strings"
	"testing"
	"time"
)

// Regression (found in review, eighteenth session): runbook step 8 lists
// agentfleet_dlq_replayer_paused among the drain's metrics, and the Grafana
// panel "DLQ replays paused by cooldown" plots it ("1 while the replayer
// holds back replays of the model because its cooldown is open"). drain is
// the only command that serves /metrics, yet while a model cooled down it
// held back every entry of that model (skipped_total{reason="cooling_down"}
// grew) and never set the gauge: the panel stayed empty while the DLQ was
// not being drained.
func TestDrainExportsPausedWhileAModelCoolsDown(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	x.seed("cool", 3, "SERVER", 0)
	until := x.openCooldown(ctx, "sim:support", time.Hour)
	d := startDrainWithMetrics(t, x, map[string]string{
		"AGENTFLEET_DRAIN_INTERVAL": "100ms", "AGENTFLEET_DRAIN_RATE": "0",
		"AGENTFLEET_COOLDOWN_MIN_CALLS": "2", "AGENTFLEET_COOLDOWN_DURATION": "1h",
	})
	scrape := func() string { _, m := d.get("/metrics"); return m }
	skipped := MetricSkipped + `{class="SERVER",reason="cooling_down"}`
	eventually(t, "the drain holds back the cooling model's entries", 10*time.Second, func() bool {
		return strings.Contains(scrape(), skipped)
	})
	if n := len(x.requestMsgIDs()); n != 0 {
		t.Fatalf("%d replays published while the cooldown was open", n)
	}
	m := scrape()
	want := MetricPaused + `{model="sim:support"} 1`
	if !strings.Contains(m, want) {
		var lines []string
		for _, l := range strings.Split(m, "\n") {
			if strings.HasPrefix(l, "agentfleet_dlq_replayer_") {
				lines = append(lines, l)
			}
		}
		t.Fatalf("the drain holds back every replay of sim:support (cooldown open until %s) but /metrics lacks %q:\n%s",
			until.Format(time.RFC3339), want, strings.Join(lines, "\n"))
	}
	// The cooldown ends (its keys go): the next pass replays the entries
	// and clears the gauge.
	keys, err := x.rdb.Keys(ctx, x.prefix+"cooldown:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("cooldown keys %v: %v", keys, err)
	}
	if err := x.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gauge cleared once the cooldown closed", 10*time.Second, func() bool {
		return strings.Contains(scrape(), MetricPaused+`{model="sim:support"} 0`)
	})
	d.stop()
}
