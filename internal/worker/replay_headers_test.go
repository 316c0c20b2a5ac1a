package worker_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/replayer"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// A request whose Agent-Replay-Count is out of range (a producer's: Atoi
// gave MaxInt) runs as a first run. Recorded as MaxInt, the replayer's next
// count wrapped to a negative one, read as a first run, and the replay of
// its dead letter was acked as a redelivery without running.
func TestOutOfRangeReplayCountIsAFirstRun(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel(
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}),
		agenttest.Reply(agenttest.Text("done")))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-big", "s1", "hi"), map[string]string{envelope.HeaderReplayCount: "99999999999999999999"})
	if res := e.await("inv-big"); res.Status != envelope.StatusDeadLettered {
		t.Fatalf("first run: %+v", res)
	}
	entries := e.dlqEntries()
	if len(entries) != 1 || entries[0].ReplayCount != 0 {
		t.Fatalf("DLQ entries %+v, want one with replay count 0", entries)
	}
	if _, err := e.js.PublishMsg(context.Background(), replayer.ReplayMsg(e.sc, entries[0])); err != nil {
		t.Fatal(err)
	}
	if res := e.await("inv-big"); res.Status != envelope.StatusCompleted || res.Content != "done" {
		t.Fatalf("replay: %+v", res)
	}
}
