package replayer

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
)

// Regression (found in review, nineteenth session): drain, the one command
// that runs for days as a service, compared its stores with the ones the
// fleet's workers record only once, when it started (cmdCtx.openFleet in
// runDrain), never again in its loop. When the fleet's workers moved to
// other stores while it ran (the README's "Switching stores": drain the
// fleet, delete the worker consumer, start the workers on the new Redis;
// they record the new stores' id), or when the drain started while there
// was no worker consumer to check against (only a warning), the drain went
// on replaying with stores that are not the fleet's: its "already
// completed" check read invocation records no worker writes any more and
// its cooldown gate read keys no worker sets, exactly what the check
// refuses for show, replay and a freshly started drain (exit 3). Each pass
// now checks the stores again (one consumer info and one GET); a pass on
// other stores replays nothing, logs why and counts a halt of rule
// "stores", and the drain keeps running: once the fleet records its stores
// again, the next pass replays.
func TestDrainKeepsReplayingAfterTheFleetRecordsOtherStores(t *testing.T) {
	x := newFx(t, true)
	d := startDrainWithMetrics(t, x, map[string]string{"AGENTFLEET_DRAIN_INTERVAL": "100ms", "AGENTFLEET_DRAIN_RATE": "0"})
	scrape := func() string { _, m := d.get("/metrics"); return m }
	eventually(t, "a first drain pass (the stores check passed at start)", 10*time.Second, func() bool {
		return strings.Contains(scrape(), MetricPasses+" ")
	})

	// The fleet's workers now record other stores: another Redis server
	// (another stores id), as TestStoresCheck's "another Redis server".
	setWorkerStores(t, x, app.RedisStoresIdentity(x.cfg.Worker(), "0123456789abcdef"))
	// A fresh show already refuses these stores.
	x.run(ctxT(t), nil, "show", "nobody").must(t, ExitUsage, "show after the fleet moved to other stores")

	x.seed("moved", 1, "SERVER", 0)
	replayed := func() bool { return x.streamState(x.sc.RequestsStream).Msgs > 0 }
	refused := func() bool { return strings.Contains(d.stderr.String(), "not the fleet's stores") }
	eventually(t, "the drain to replay the entry or refuse the stores", 20*time.Second, func() bool {
		return replayed() || refused()
	})
	if replayed() {
		t.Fatalf("the drain, started on the fleet's stores, replayed an entry after the fleet's workers recorded other stores "+
			"(a freshly started drain, show and replay refuse them with exit 3); drain stderr:\n%s", d.stderr.String())
	}
	// Visible on /metrics: each held pass counts a halt of rule "stores".
	// (The drain creates the series at 0 when it starts: a count above 0.)
	heldRE := regexp.MustCompile(`(?m)^` + MetricHalts + `\{rule="` + RuleStores + `"\} [1-9]`)
	eventually(t, "the drain's halts of rule stores on /metrics", 10*time.Second, func() bool {
		return heldRE.MatchString(scrape())
	})
	if replayed() {
		t.Fatalf("the drain replayed on other stores; drain stderr:\n%s", d.stderr.String())
	}

	// The fleet's workers record the drain's stores again: the drain, still
	// running, replays the entry.
	setWorkerStores(t, x, x.sc.WorkerStores)
	eventually(t, "the drain to replay once the stores are the fleet's again", 20*time.Second, replayed)
	contains(t, d.stderr.String(), "record this drain's stores; replaying")
	if code := d.stop(); code != ExitOK {
		t.Fatalf("drain exited %d, want %d", code, ExitOK)
	}
}
