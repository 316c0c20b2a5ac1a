package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, nineteenth session): In NATS-only mode a
// session must fit in one KV entry; an append past that fails with
// natssession.ErrSessionTooLarge, which is permanent: the session only
// grows, so every later append to it fails the same way. The worker took it
// for an outage of its own infrastructure (an *agent.SessionError, isInfra)
// and Nak'ed the message with a delay, so each delivery ran the model (and
// the tools) again until the run limit, and the invocation was then
// dead-lettered as UNKNOWN with a reason that blamed "crash, kill,
// shutdown, lost lock or store failure" and never said the session is full
// (a DLQ replay failed the same way, MaxDeliveries model runs at a time).
// Correct: a session the store refuses as too large
// (session.ErrSessionTooLarge) is not retried as an outage; the invocation
// is dead-lettered after its one run, never replayed automatically, with a
// reason that names the session size limit; a replay by hand runs once more
// and is dead-lettered again the same way, without looping.
func TestSessionTooLargeIsNotRetriedAsInfrastructure(t *testing.T) {
	e := newEnv(t)
	// A long conversation: the session is close to the entry limit.
	nearlyFullSession(t, e, "review_sessions_too_large", "long")
	var steps []agenttest.Step
	for range 10 {
		steps = append(steps, agenttest.Reply(agenttest.Text("Here is a fairly long answer that no longer fits into the session: "+strings.Repeat("y", 300))))
	}
	llm := agenttest.NewScriptedModel(steps...)
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 3})
	e.publish(request("inv-full", "long", "one more question"), nil)
	res := e.await("inv-full")
	eventually(t, "acked", func() bool { return e.pending() == 0 })
	en := e.dlqEntries()
	t.Logf("result %s (%s), model calls %d, dlq %d entries", res.Status, res.ErrorClass, llm.Calls(), len(en))
	for _, x := range en {
		t.Logf("dlq entry: class %s, reason %q", x.Class, x.Reason)
	}
	if res.Status == envelope.StatusCompleted {
		t.Fatalf("result = %+v; the session could not store the answer", res)
	}
	if llm.Calls() != 1 {
		t.Errorf("the model ran %d times for one request: a session too large for the store was retried as an infrastructure outage", llm.Calls())
	}
	if len(en) != 1 || !strings.Contains(strings.ToLower(en[0].Reason), "size") {
		var reasons []string
		for _, x := range en {
			reasons = append(reasons, x.Class+": "+x.Reason)
		}
		t.Fatalf("dead letter does not say the session exceeds the store's size limit: %q", reasons)
	}
	if en[0].Class != string(taxonomy.Unknown) || en[0].Retryable || taxonomy.PolicyFor(taxonomy.Class(en[0].Class)).AutoReplay {
		t.Errorf("dead letter class %s (retryable %v); want UNKNOWN, never replayed automatically", en[0].Class, en[0].Retryable)
	}
	if res.UserMessage != worker.MsgFailed {
		t.Errorf("user message = %q; want MsgFailed, not the answer the session could not keep", res.UserMessage)
	}

	// A replay by hand while the session still does not fit: one more run,
	// dead-lettered again with the next replay count, and acked.
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-full", "long", "one more question")), "replay:inv-full:1",
		map[string]string{envelope.HeaderReplayCount: "1", envelope.HeaderResume: "true"})
	res = e.await("inv-full")
	eventually(t, "replay acked", func() bool { return e.pending() == 0 })
	en = e.dlqEntries()
	if res.Status != envelope.StatusDeadLettered || llm.Calls() != 2 || len(en) != 2 || en[1].ReplayCount != 1 ||
		en[1].Class != string(taxonomy.Unknown) || !strings.Contains(en[1].Reason, "size limit") {
		t.Fatalf("replay: result %+v, model calls %d, dlq %+v; want one more run dead-lettered again (replay 1)", res, llm.Calls(), en)
	}
}

// The same when the append the store refuses is one the run makes itself
// (the user message and the model's call, stored before the tool runs):
// the run ends with an *agent.SessionError wrapping
// session.ErrSessionTooLarge, and the invocation is dead-lettered after
// that one model call, the tool not run.
func TestSessionTooLargeWithinTheRunIsDeadLettered(t *testing.T) {
	e := newEnv(t)
	nearlyFullSession(t, e, "sessions_full_in_run", "full")
	var steps []agenttest.Step
	for range 10 {
		steps = append(steps, agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"})))
	}
	llm := agenttest.NewScriptedModel(steps...)
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 3})
	e.publish(request("inv-full-run", "full", "where is my order A-1042? "+strings.Repeat("q", 300)), nil)
	res := e.await("inv-full-run")
	eventually(t, "acked", func() bool { return e.pending() == 0 })
	en := e.dlqEntries()
	if res.Status != envelope.StatusDeadLettered || llm.Calls() != 1 || len(res.ToolsRun) != 0 || len(en) != 1 ||
		en[0].Class != string(taxonomy.Unknown) || !strings.Contains(en[0].Reason, "size limit") {
		t.Fatalf("result %+v, model calls %d, dlq %+v; want a dead letter naming the size limit after one model call", res, llm.Calls(), en)
	}
}

// nearlyFullSession has the agents of the workers e starts keep their
// sessions in a NATS-only store (the KV bucket named bucket, entries of at
// most 4096 bytes) that holds a long conversation: the "support" session
// sessionID of user u1, close to the entry limit.
func nearlyFullSession(t *testing.T, e *env, bucket, sessionID string) {
	t.Helper()
	ctx := context.Background()
	svc, err := natssession.NewService(ctx, e.js, natssession.Config{SessionBucket: bucket, MaxValueSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{App: "support", UserID: "u1", SessionID: sessionID}
	if err := svc.AppendEvent(ctx, k, &session.Event{InvocationID: "earlier", Author: "support",
		Content: model.NewTextContent(model.RoleModel, strings.Repeat("x", 2800))}); err != nil {
		t.Fatal(err)
	}
	e.deps = func(d *worker.Deps) {
		for _, r := range d.Agents {
			r.Sessions = svc
		}
	}
}
