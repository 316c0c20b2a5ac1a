package worker_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/replayer"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// dlq.Entry.FirstFailedAt is "when the invocation first failed (the first
// entry's FailedAt across replays)", and worker.HeaderFirstFailedAt exists
// "so DLQ entries keep it across replays". A forced replay of a BAD_INPUT
// entry (here: an agent this fleet does not serve yet) that fails again must
// keep the first failure's time; badInput sets first_failed_at to now.
func TestBadInputReplayKeepsFirstFailedAt(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel()
	e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	const id = "inv-nobody"
	e.publishRaw(e.sc.RequestSubject("nobody"),
		[]byte(`{"v":1,"invocation_id":"`+id+`","agent":"nobody","user_id":"u","session_id":"s","message":{"parts":[{"text":"x"}]}}`), id, nil)
	if res := e.await(id); res.Status != envelope.StatusFailed || res.ErrorClass != "BAD_INPUT" {
		t.Fatalf("first run: %+v", res)
	}
	entries := e.dlqEntries()
	if len(entries) != 1 {
		t.Fatalf("DLQ entries %+v, want one", entries)
	}
	first := entries[0]
	// The replayer's forced replay of the entry.
	if _, err := e.js.PublishMsg(context.Background(), replayer.ReplayMsg(e.sc, first)); err != nil {
		t.Fatal(err)
	}
	if res := e.await(id); res.Status != envelope.StatusFailed || res.ErrorClass != "BAD_INPUT" {
		t.Fatalf("replay: %+v", res)
	}
	entries = e.dlqEntries()
	if len(entries) != 2 {
		t.Fatalf("DLQ holds %d entries after the replay failed again, want 2", len(entries))
	}
	second := entries[1]
	if second.ReplayCount != 1 {
		t.Fatalf("second entry replay_count %d, want 1", second.ReplayCount)
	}
	if !second.FirstFailedAt.Equal(first.FailedAt) {
		t.Fatalf("replayed BAD_INPUT entry: first_failed_at %s, want the first failure's %s (failed_at %s)",
			second.FirstFailedAt.Format("15:04:05.000000000"), first.FailedAt.Format("15:04:05.000000000"), second.FailedAt.Format("15:04:05.000000000"))
	}
}
