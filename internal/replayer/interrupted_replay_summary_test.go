package replayer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// seedModel publishes n entries of class SERVER whose model is modelName,
// ids prefix-0.., and returns the ids.
func (x *fx) seedModel(ctx context.Context, prefix string, n int, modelName string) []string {
	x.t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		data, _ := request(id, fmt.Sprintf("A-%d", 1001+i)).Encode()
		e := &dlq.Entry{InvocationID: id, Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
			Retryable: true, DeliveryCount: 1, Worker: "w-test", Model: modelName}
		e.SetRequest(data)
		if _, err := x.pub.Publish(ctx, e); err != nil {
			x.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): an interrupted
// replay ended with "dlq-replayer replay: context canceled": on-call at
// 3 a.m. was not told how far it got, what it left in the DLQ, or that
// running it again is how to go on. The replay now prints its summary and
// says it was interrupted, how many entries it handled of how many, how
// many stay in the DLQ, and to run the same command again (exit 130 as
// before).
//
// The run replays the entries of a model that works, then pauses on a
// model whose fleet-wide cooldown is open; ^C comes during the pause.
func TestInterruptedReplaySaysWhatItDidAndLeft(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	done := x.seedModel(ctx, "ok", 3, "sim:ok")
	cool := x.seedModel(ctx, "cool", 2, "sim:cooling")
	env := map[string]string{"AGENTFLEET_COOLDOWN_MIN_CALLS": "2", "AGENTFLEET_COOLDOWN_DURATION": "1h", "AGENTFLEET_REPLAY_COOLDOWN_POLL": "50ms"}
	x.openCooldown(ctx, "sim:cooling", time.Hour)

	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	var o, e syncBuf
	exit := make(chan int, 1)
	go func() {
		exit <- x.runBuf(runCtx, env, &o, &e, "replay", "--yes", "--rate", "0", "--concurrency", "1")
	}()
	eventually(t, "the pause on sim:cooling", 30*time.Second, func() bool { return strings.Contains(e.String(), "PAUSED: model sim:cooling") })
	interrupt() // ^C
	code := <-exit
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, o.String(), e.String())
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, ExitInterrupted)
	}
	if strings.Contains(e.String(), "context canceled") {
		t.Fatalf("stderr says %q instead of what the replay did", "context canceled")
	}
	contains(t, e.String(), "dlq-replayer replay: interrupted: 3 of 5 entries handled", "the other 2 stay in "+x.sc.DLQStream,
		"Run the same command again to go on")
	if s := parseSummaryTotal(t, o.String()); s["REPLAYED"] != len(done) {
		t.Fatalf("summary total %v, want REPLAYED %d", s, len(done))
	}
	if left := x.dlqIDs(); !slices.Equal(left, cool) {
		t.Fatalf("the DLQ holds %v, want %v (the replayed entries removed, the others left)", left, cool)
	}
}

// The same for drain (left open in the twenty-third session, fixed in the
// twenty-fourth): a pass that ^C stopped was logged "drain pass done", as
// if it had finished; it is logged as interrupted, with what it did and
// how many entries it did not handle (drain still exits 0: a service
// stopped).
func TestInterruptedDrainPassIsLoggedSo(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	ids := x.seedModel(ctx, "drn", 3, "sim:ok")
	env := map[string]string{"AGENTFLEET_DRAIN_INTERVAL": "100ms", "AGENTFLEET_DRAIN_RATE": "0", "AGENTFLEET_REPLAY_RESULT_TIMEOUT": "1h"}
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	var o, e syncBuf
	exit := make(chan int, 1)
	go func() { exit <- x.runBuf(runCtx, env, &o, &e, "drain", "--metrics-addr", "") }()
	// No worker: the pass publishes its replays, then waits for their
	// results (up to the hour of result_timeout).
	eventually(t, "the pass's replays published", 30*time.Second, func() bool { return len(x.requestMsgIDs()) == len(ids) })
	interrupt() // ^C
	code := <-exit
	t.Logf("exit %d\nstderr:\n%s", code, e.String())
	if code != ExitOK {
		t.Fatalf("drain exit %d, want %d", code, ExitOK)
	}
	if strings.Contains(e.String(), "drain pass done") {
		t.Fatal(`the interrupted pass was logged "drain pass done"`)
	}
	contains(t, e.String(), "drain pass interrupted", `"not_handled":0`, `"replayed":3`)
}
