package worker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review of this session's fix, twenty-fifth session):
// deadLetterRaw published nothing when the refused id's record was running
// ("its run publishes its own"). But the record may be running because of
// the refused message itself: an earlier delivery of this very request
// started it (here cut short by an idempotency store outage, the record
// left running for the redelivery), and the redelivery is refused as
// BAD_INPUT by a worker whose limits changed in a rolling deploy
// (MaxRequestBytes lowered, or a server with a smaller max_payload). The
// message was terminated and no run was left: nobody published a result,
// and the producer's `send --wait` / client.Await waited until its own
// timeout. A running record's refusal is published again, as before that
// fix (a live run publishes its own result after it, which stays the last
// one).
func TestBadInputOfARunningInvocationIsAnswered(t *testing.T) {
	e := newEnv(t)
	const id = "inv-r8d-own-running"
	ledger := tool.MustFunc("ledger", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		return nil, &idempotency.StoreError{Backend: "redis", Op: "claim", Err: errors.New("dial tcp: connection refused")}
	})
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Call("ledger", nil)), agenttest.Reply(agenttest.Call("ledger", nil)),
		agenttest.Reply(agenttest.Call("ledger", nil)), agenttest.Reply(agenttest.Call("ledger", nil)))
	w1 := e.startWorker("w1", e.supportAgent(llm, ledger), worker.Config{})
	e.publish(request(id, "s1", "refund A-1042 and log it in the ledger"), nil)
	eventually(t, "the first run put back (own infrastructure)", func() bool { return w1.count("support", "nak_infra") >= 1 })
	w1.shutdown(t)
	if rec, err := e.invs.Get(context.Background(), id); err != nil || rec.Status != "running" {
		t.Fatalf("record %+v %v, want running", rec, err)
	}

	// The next worker of the rolling deploy has a lower request limit.
	w2 := e.startWorker("w2", e.supportAgent(agenttest.NewScriptedModel()), worker.Config{MaxRequestBytes: 64})
	eventually(t, "the redelivery refused", func() bool {
		return e.pending() == 0 && w2.count("_unknown", "bad_input")+w2.count("support", "bad_input") == 1
	})
	if en := e.dlqEntries(); len(en) != 1 || en[0].Class != "BAD_INPUT" {
		t.Fatalf("DLQ entries %+v, want one BAD_INPUT entry", en)
	}
	if got := e.storedResult(id); got == nil {
		t.Fatalf("the request %s was refused and terminated, its record says running and no run is left: "+
			"no result was ever published, its producer waits until its own timeout", id)
	} else if r, _ := envelope.DecodeResult(got); r == nil || r.Status != envelope.StatusFailed || r.ErrorClass != "BAD_INPUT" {
		t.Fatalf("stored result %s, want the refusal (failed, BAD_INPUT)", got)
	}
}
