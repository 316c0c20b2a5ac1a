package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review of this session's fix, twenty-fourth session):
// unknownAgent's bound counted j.delivered (NumDelivered plus
// Agent-Prior-Deliveries), i.e. every delivery, including the busy Naks and
// requeues of the workers that DO run the agent (which Config says never
// count). A replay of a hot session's dead letter that waited for its busy
// session on an agent worker is refused BAD_INPUT the first time a worker
// without the agent sees it, with the (false) reason "no worker that took it
// ... runs it", replacing the user's "queued" with "rejected".
func TestUnknownAgentBoundCountsOnlyItsOwnPutBacks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w1 := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}))), worker.Config{})
	req := request("inv-7d-hot", "s-7d-hot", "refund my order")
	e.publish(req, nil)
	if first := e.await(req.InvocationID); first.UserMessage != worker.MsgQueued {
		t.Fatalf("precondition: %+v, want queued", first)
	}
	eventually(t, "the request acked", func() bool { return e.pending() == 0 })
	w1.shutdown(t)

	// Another invocation of the session is running (its holder renews).
	key := session.Key{App: "support", UserID: req.UserID, SessionID: req.SessionID}
	if _, err := e.locker.Acquire(ctx, key, "another-run", time.Hour); err != nil {
		t.Fatal(err)
	}
	// The replay waits for its session on a worker that runs the agent.
	w1b := e.startWorker("w1b", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("refunded")))), worker.Config{})
	e.publishCopy(req, map[string]string{envelope.HeaderReplayCount: "1"})
	eventually(t, "the replay requeued twice by the agent's worker (session busy)", func() bool { return w1b.count("support", "requeued") >= 2 })
	w1b.shutdown(t) // e.g. a rolling restart of the agent's workers
	if err := e.locker.Release(ctx, key, "another-run"); err != nil {
		t.Fatal(err)
	}

	w2 := e.noAgentWorker("w2", 5)
	eventually(t, "the replay handled by the worker without the agent", func() bool {
		return w2.count("_unknown", "bad_input")+w2.count("_unknown", "nak_no_agent") > 0
	})
	last := e.lastResult(req.InvocationID)
	t.Logf("w1b nak_busy=%v requeued=%v; w2 nak_no_agent=%v bad_input=%v; last result %s %s %q",
		w1b.count("support", "nak_busy"), w1b.count("support", "requeued"),
		w2.count("_unknown", "nak_no_agent"), w2.count("_unknown", "bad_input"), last.Status, last.ErrorClass, last.UserMessage)
	if w2.count("_unknown", "bad_input") != 0 {
		t.Errorf("a replay only ever put back for its busy session by the agent's own worker was refused BAD_INPUT on its first "+
			"delivery to a worker without the agent (nak_no_agent=%v): user now told %q",
			w2.count("_unknown", "nak_no_agent"), last.UserMessage)
	}
}
