package replayer

import (
	"strings"
	"testing"
	"time"
)

// Regression (found in review, seventeenth session): the drain's DLQ-depth
// gauge labelled every entry of an auto-replayable class replayable="true",
// also one the drain skips for good (first failed before its effects'
// idempotency records' retention): the waiting-for-a-person alert, which
// counts replayable="false", never saw it. It is "false" now.
func TestDrainGaugeCountsSkippedEntriesAsWaitingForAPerson(t *testing.T) {
	x := newFx(t, false)
	now := time.Now()
	publishAged(t, x, "too-old", "A-1", 0, now.Add(-time.Hour), now.Add(-30*24*time.Hour))
	d := startDrainWithMetrics(t, x, map[string]string{"AGENTFLEET_DRAIN_INTERVAL": "100ms", "AGENTFLEET_DRAIN_RATE": "0"})
	scrape := func() string { _, m := d.get("/metrics"); return m }
	want := MetricEntries + `{class="SERVER",replayable="false"} 1`
	eventually(t, "the too-old SERVER entry counted as waiting for a person", 10*time.Second, func() bool {
		return strings.Contains(scrape(), want)
	})
	if m := scrape(); strings.Contains(m, MetricEntries+`{class="SERVER",replayable="true"} 1`) {
		t.Fatalf("the too-old entry is counted as replayable:\n%s", m)
	}
	d.stop()
}
