package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, twentieth session): the consumer's AckWait
// is lowered (another process's streams.Ensure) while an invocation runs.
// The worker noticed within ConsumerCheckInterval (AckWait() reported the
// new value), but the running invocation's heartbeat stayed armed at the
// old interval (AckWait/3 of the old value): no InProgress came within the
// new AckWait and the server redelivered the running invocation. Now the
// worker re-arms its live heartbeats when the AckWait goes down: a beat at
// once, then the new interval.
func TestRunningHeartbeatFollowsALoweredAckWait(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.sc.WorkerAckWait = 30 * time.Second
	if _, err := streams.Ensure(ctx, e.js, e.sc); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	slow := tool.MustFunc("slow_lookup", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		close(entered)
		<-release
		return tool.OK(nil), nil
	})
	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("slow_lookup", nil)),
		agenttest.Reply(agenttest.Text("Looked it up.")),
	)
	w := e.startWorker("w1", e.supportAgent(llm, slow), worker.Config{AckWait: 30 * time.Second, ConsumerCheckInterval: 20 * time.Millisecond})
	e.publish(request("inv-hb", "s1", "look it up"), nil)
	<-entered

	beat := make(chan struct{}, 1)
	sub, err := e.nc.Subscribe("$JS.ACK.>", func(m *nats.Msg) {
		if string(m.Data) == "+WPI" {
			select {
			case beat <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	e.sc.WorkerAckWait = 3 * time.Second // another process's Ensure
	if _, err := streams.Ensure(ctx, e.js, e.sc); err != nil {
		t.Fatal(err)
	}
	lowered := time.Now()
	eventually(t, "the worker follows the lowered AckWait", func() bool { return w.w.AckWait() == 3*time.Second })
	select {
	case <-beat:
	case <-time.After(3*time.Second - time.Since(lowered)):
		cons, err := e.js.Consumer(ctx, e.sc.RequestsStream, e.sc.WorkerConsumer)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := cons.Info(ctx)
		t.Fatalf("no InProgress within the consumer's new AckWait (3s) although the worker reports AckWait %v; "+
			"the running invocation is redelivered (consumer redelivered=%d, nak_busy=%v)",
			w.w.AckWait(), info.NumRedelivered, w.count("support", "nak_busy"))
	}
}
