package replayer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// The provider still fails: the canary's replays dead-letter again and the
// run halts (exit 2) before replaying the rest.
func TestCanaryHaltsWhenProviderStillFails(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	ids := x.seed("can", 10, "SERVER", 0)
	x.startWorker("w-down", simModel(t, "server=1.0"))
	out := x.run(ctx, nil, "replay", "--yes", "--canary", "2", "--rate", "0").must(t, ExitHalted, "canary")
	contains(t, out.stderr, "HALTED (canary)", "2 of 2 canary replays did not complete")
	s := parseSummaryTotal(t, out.stdout)
	if s["REPLAYED"] != 2 || s["DEAD-LETTERED AGAIN"] != 2 {
		t.Fatalf("summary %v", s)
	}
	if pub := x.requestMsgIDs(); len(pub) > 2 {
		t.Fatalf("replayed past the canary: %v", pub)
	}
	// 8 untouched entries + the 2 canaries dead-lettered again (replay 1).
	eventually(t, "10 entries in the DLQ", 10*time.Second, func() bool { return len(x.dlqIDs()) == 10 })
	st := x.run(ctx, nil, "list", "--json").must(t, ExitOK, "list")
	if strings.Count(st.stdout, `"replay_count": 1`) != 2 {
		t.Fatalf("canaries not back with replay count 1:\n%s", st.stdout)
	}
	_ = ids
}

// An interrupted run had published the first replays (their DLQ entries
// were not deleted yet), and the provider still fails. A rerun with
// --canary must not count those duplicates, which no result follows, as a
// passed canary: it takes the next entries as the canary and halts.
func TestCanaryIgnoresReplaysAnEarlierRunPublished(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	x.seed("can", 10, "SERVER", 0)
	r := dlq.NewReader(x.js, dlq.Config{Stream: x.sc.DLQStream, Prefix: x.sc.DLQPrefix})
	n := 0
	for it, err := range r.List(ctx, dlq.Filter{}) {
		if it == nil {
			t.Fatal(err)
		}
		if n < 3 { // the interrupted run's publishes, in plan order
			if _, err := x.js.PublishMsg(ctx, ReplayMsg(x.sc, it.Entry), jetstream.WithExpectStream(x.sc.RequestsStream)); err != nil {
				t.Fatal(err)
			}
		}
		n++
	}
	x.startWorker("w-down", simModel(t, "server=1.0"))
	out := x.run(ctx, nil, "replay", "--yes", "--canary", "3", "--rate", "0").must(t, ExitHalted, "canary after an interrupted run")
	contains(t, out.stderr, "HALTED (canary)", "3 of 3 canary replays did not complete")
	if pub := x.requestMsgIDs(); len(pub) > 6 {
		t.Fatalf("replayed past the canary: %d replays published (3 earlier + 3 canaries at most): %v", len(pub), pub)
	}
}

// The canary waits for all its results within one result_timeout, not one
// result_timeout per canary replay: with five replays and no worker, a
// wait per replay (10 s) would outlast the run's 7 s context and end
// interrupted instead of halted.
func TestCanaryWaitsOneResultTimeout(t *testing.T) {
	x := newFx(t, true)
	x.seed("slow", 5, "SERVER", 0) // no worker: no result comes back
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Second)
	defer cancel()
	env := map[string]string{"AGENTFLEET_REPLAY_RESULT_TIMEOUT": "2s"}
	out := x.run(ctx, env, "replay", "--yes", "--canary", "5", "--rate", "0").must(t, ExitHalted, "canary without results")
	contains(t, out.stderr, "HALTED (canary)", "5 of 5 canary replays did not complete")
}

// While replaying, the run halts by itself once the share of replays that
// come back dead-lettered crosses the threshold.
func TestAutoHaltWhenReplaysFailAgain(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	const n = 40
	x.seed("auto", n, "SERVER", 0)
	x.startWorker("w-down", simModel(t, "server=1.0"))
	env := map[string]string{"AGENTFLEET_REPLAY_HALT_MIN_RESULTS": "4"}
	out := x.run(ctx, env, "replay", "--yes", "--rate", "20", "--concurrency", "1").must(t, ExitHalted, "auto-halt")
	contains(t, out.stderr, "HALTED (auto-halt)", "the cause is not fixed")
	s := parseSummaryTotal(t, out.stdout)
	if s["REPLAYED"] >= n || s["REPLAYED"] < 4 || s["DEAD-LETTERED AGAIN"] < 4 {
		t.Fatalf("summary %v", s)
	}
}

// While the model's fleet-wide cooldown is open, nothing is replayed; the
// replay resumes by itself once it closes.
func TestCooldownPausesReplay(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	x.seed("cool", 5, "SERVER", 0)
	env := map[string]string{"AGENTFLEET_COOLDOWN_MIN_CALLS": "2", "AGENTFLEET_COOLDOWN_DURATION": "4s", "AGENTFLEET_REPLAY_COOLDOWN_POLL": "50ms"}
	until := x.openCooldown(ctx, "sim:support", 4*time.Second)

	var o, e syncBuf
	done := make(chan int, 1)
	t.Logf("replay starts at %s, cooldown until %s", time.Now().Format(time.StampMilli), until.Format(time.StampMilli))
	go func() { done <- x.runBuf(ctx, env, &o, &e, "replay", "--yes", "--rate", "0") }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.String(), "PAUSED: model sim:support") {
		if time.Now().After(deadline) {
			t.Fatalf("the replay did not pause (cooldown until %s, now %s)\nstderr:\n%s\nstdout:\n%s", until, time.Now(), e.String(), o.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(x.requestMsgIDs()); n != 0 && time.Now().Before(until) {
		t.Fatalf("%d replays published while the cooldown was open", n)
	}
	code := <-done
	if code != ExitOK || !strings.Contains(e.String(), "RESUMED") {
		t.Fatalf("exit %d\n%s\n%s", code, o.String(), e.String())
	}
	if time.Now().Before(until) {
		t.Fatal("finished before the cooldown closed")
	}
	if n := len(x.requestMsgIDs()); n != 5 {
		t.Fatalf("%d replays after the cooldown", n)
	}
}

// A small backlog whose replays all fail again (fewer than
// halt_min_results, so the auto-halt cannot fire; no cooldown covers them,
// as for a spent quota) makes drain back off halt_backoff instead of
// replaying it every interval until max_replays parks it.
func TestDrainBacksOffWhenNoReplayOfAPassCompletes(t *testing.T) {
	x := newFx(t, true)
	x.seed("quota", 3, "QUOTA_EXHAUSTED", 0)
	x.startWorker("w-quota", simModel(t, "quota=1.0"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := map[string]string{"AGENTFLEET_DRAIN_INTERVAL": "100ms", "AGENTFLEET_DRAIN_RATE": "0", "AGENTFLEET_DRAIN_HALT_BACKOFF": "1h"}
	var o, e syncBuf
	done := make(chan int, 1)
	go func() { done <- x.runBuf(ctx, env, &o, &e, "drain", "--metrics-addr", "") }()
	eventually(t, "the back-off after a pass with no completion", 30*time.Second, func() bool {
		return strings.Contains(e.String(), "no replay of this pass completed; backing off")
	})
	// A pass that does not happen sends no signal: watch for one over ten
	// drain intervals (without the back-off the next pass starts after one).
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n := strings.Count(e.String(), "drain pass done"); n != 1 {
			t.Fatalf("%d passes, want 1: the drain did not back off\n%s", n, e.String())
		}
	}
	cancel()
	<-done
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 0 {
		t.Fatalf("%d entries parked while the cause was unfixed", st.Msgs)
	}
}

// drain replays the auto-replayable classes by itself, serves metrics and
// health, and leaves what needs a person alone.
func TestDrainReplaysAutomaticallyWithMetrics(t *testing.T) {
	x := newFx(t, true)
	res := x.watchResults()
	ids := x.seed("drain", 6, "SERVER", 0)
	x.seed("person", 1, "CALL_BUDGET", 0)
	x.startWorker("w-ok", simModel(t, ""))
	d := startDrainWithMetrics(t, x, map[string]string{"AGENTFLEET_DRAIN_INTERVAL": "100ms", "AGENTFLEET_DRAIN_RATE": "0"})
	eventually(t, "every SERVER entry completed", 30*time.Second, func() bool { return res.count(ids, envelope.StatusCompleted) == len(ids) })
	eventually(t, "only the CALL_BUDGET entry left", 10*time.Second, func() bool {
		l := x.dlqIDs()
		return len(l) == 1 && l[0] == "person-0"
	})
	get := d.get
	if c, _ := get("/healthz"); c != 200 {
		t.Fatalf("/healthz %d", c)
	}
	if c, b := get("/readyz"); c != 200 {
		t.Fatalf("/readyz %d %s", c, b)
	}
	_, metrics := get("/metrics")
	for _, m := range []string{MetricReplayed + `{agent="support",class="SERVER"} 6`, MetricPasses, MetricEntries, MetricResults} {
		if !strings.Contains(metrics, m) {
			t.Fatalf("/metrics lacks %q", m)
		}
	}
	if code := d.stop(); code != ExitOK && code != ExitInterrupted {
		t.Fatalf("drain exit %d\n%s", code, d.stderr.String())
	}
}

// openCooldown opens the fleet cooldown of model in x's Redis for d (three
// transient failures against a MinCalls of 2) and returns when it ends.
func (x *fx) openCooldown(ctx context.Context, model string, d time.Duration) time.Time {
	x.t.Helper()
	ccfg := x.cfg.Cooldown
	ccfg.MinCalls, ccfg.Duration = 2, d
	store := cooldown.NewRedis(x.rdb, x.prefix, ccfg)
	var until time.Time
	for range 3 {
		u, err := store.Record(ctx, model, true)
		if err != nil {
			x.t.Fatal(err)
		}
		until = u
	}
	if until.IsZero() {
		x.t.Fatal("cooldown did not open")
	}
	return until
}
