package replayer

import (
	"context"
	"io"
	"net/http"
	"regexp"
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := map[string]string{"AGENTFLEET_DRAIN_INTERVAL": "100ms", "AGENTFLEET_DRAIN_RATE": "0"}
	var o, e syncBuf
	done := make(chan int, 1)
	go func() { done <- x.runBuf(ctx, env, &o, &e, "drain", "--metrics-addr", "127.0.0.1:0") }()
	addrRE := regexp.MustCompile(`on (127\.0\.0\.1:\d+)`)
	eventually(t, "metrics address", 10*time.Second, func() bool { return addrRE.MatchString(e.String()) })
	addr := addrRE.FindStringSubmatch(e.String())[1]
	scrape := func() string {
		r, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	want := MetricEntries + `{class="SERVER",replayable="false"} 1`
	eventually(t, "the too-old SERVER entry counted as waiting for a person", 10*time.Second, func() bool {
		return strings.Contains(scrape(), want)
	})
	if m := scrape(); strings.Contains(m, MetricEntries+`{class="SERVER",replayable="true"} 1`) {
		t.Fatalf("the too-old entry is counted as replayable:\n%s", m)
	}
	cancel()
	<-done
}
