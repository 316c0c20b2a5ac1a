package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// opencensus (pulled in by the genai SDK) starts a goroutine at init.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

func refundScript(text string) []agenttest.Step {
	return []agenttest.Step{
		agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"})),
		agenttest.Reply(agenttest.Call("refund_order", map[string]any{"order_id": "A-1042", "amount_cents": 1299.0})),
		agenttest.Reply(agenttest.Text(text)),
	}
}

// Row: final response → append events, publish result, ack.
func TestFinalResponseCompletes(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel(refundScript("Refunded.")...)
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-ok", "s1", "refund A-1042"), nil)
	res := e.await("inv-ok")
	if res.Status != envelope.StatusCompleted || res.Content != "Refunded." || res.ModelCalls != 3 {
		t.Fatalf("result = %+v", res)
	}
	if strings.Join(res.ToolsRun, ",") != "get_order,refund_order" || res.Attempts != 1 {
		t.Fatalf("result tools/attempts = %v %d", res.ToolsRun, res.Attempts)
	}
	eventually(t, "ack", func() bool { return e.pending() == 0 && w.count("support", "completed") == 1 })
	rec, err := e.invs.Get(context.Background(), "inv-ok")
	if err != nil || rec.Status != session.InvocationCompleted {
		t.Fatalf("record = %+v, %v", rec, err)
	}
	if len(e.orders.Refunds()) != 1 || len(e.dlqEntries()) != 0 {
		t.Fatalf("refunds=%d dlq=%d", len(e.orders.Refunds()), len(e.dlqEntries()))
	}
}

// Row: transient class after retries → DLQ (await PubAck), result "queued", ack.
// With the seed's on-model-error callback the user gets an honest degraded
// answer naming the refund; the work is still dead-lettered for replay.
func TestTransientAfterRetriesDeadLettersQueued(t *testing.T) {
	e := newEnv(t)
	steps := refundScript("unused")[:2]
	steps = append(steps, agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 503, Status: "UNAVAILABLE"}))
	ag := e.supportAgent(agenttest.NewScriptedModel(steps...))
	ag.Callbacks.OnModelError = []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{})}
	w := e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-503", "s1", "refund A-1042"), nil)
	res := e.await("inv-503")
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != "SERVER" {
		t.Fatalf("result = %+v", res)
	}
	if !strings.Contains(strings.ToLower(res.UserMessage), "refund") {
		t.Fatalf("user message %q does not say the refund happened", res.UserMessage)
	}
	entries := e.dlqEntries()
	if len(entries) != 1 || entries[0].Class != "SERVER" || !entries[0].Retryable || entries[0].InvocationID != "inv-503" {
		t.Fatalf("dlq = %+v", entries)
	}
	if strings.Join(entries[0].ToolsCompleted, ",") != "get_order,refund_order" || len(entries[0].OriginalRequest()) == 0 {
		t.Fatalf("entry lacks tools or request: %+v", entries[0])
	}
	eventually(t, "ack", func() bool { return e.pending() == 0 && w.count("support", "dead_lettered") == 1 })
}

func TestTransientWithoutCallbackDeadLettersQueued(t *testing.T) {
	e := newEnv(t)
	ag := e.supportAgent(agenttest.NewScriptedModel(agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"})))
	e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-429", "s1", "hi"), nil)
	res := e.await("inv-429")
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != "RATE_LIMITED" || res.UserMessage != worker.MsgQueued {
		t.Fatalf("result = %+v", res)
	}
}

// Row: CALL_BUDGET → DLQ (needs a person), loop-suspected alert, result "stuck", ack.
func TestCallBudgetDeadLettersStuck(t *testing.T) {
	e := newEnv(t)
	var steps []agenttest.Step
	for range 3 {
		steps = append(steps, agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"})))
	}
	ag := e.supportAgent(agenttest.NewScriptedModel(steps...))
	ag.MaxModelCalls = 2
	w := e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-loop", "s1", "loop"), nil)
	res := e.await("inv-loop")
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != "CALL_BUDGET" || res.UserMessage != worker.MsgStuck {
		t.Fatalf("result = %+v", res)
	}
	if en := e.dlqEntries(); len(en) != 1 || en[0].Retryable {
		t.Fatalf("CALL_BUDGET entry must not be auto-replayable: %+v", en)
	}
	eventually(t, "alert metric", func() bool { return testutilValue(w.metrics.LoopSuspects.WithLabelValues("support")) == 1 })
}

// Row: AUTH, NOT_FOUND, BAD_REQUEST → DLQ (replay after the fix), page-level log and metric, result failed, ack.
func TestConfigurationErrorsPageAndFail(t *testing.T) {
	for _, c := range []struct {
		code  int
		class string
	}{{401, "AUTH"}, {404, "NOT_FOUND"}, {400, "BAD_REQUEST"}} {
		t.Run(c.class, func(t *testing.T) {
			e := newEnv(t)
			ag := e.supportAgent(agenttest.NewScriptedModel(agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: c.code})))
			// Even with the degrading callback installed these must escalate.
			ag.Callbacks.OnModelError = []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{})}
			w := e.startWorker("w1", ag, worker.Config{})
			e.publish(request("inv-"+c.class, "s1", "hi"), nil)
			res := e.await("inv-" + c.class)
			if res.Status != envelope.StatusFailed || res.ErrorClass != c.class {
				t.Fatalf("result = %+v", res)
			}
			if en := e.dlqEntries(); len(en) != 1 || en[0].Class != c.class || en[0].Retryable {
				t.Fatalf("dlq = %+v", en)
			}
			eventually(t, "page metric", func() bool { return testutilValue(w.metrics.Pages.WithLabelValues(c.class, "support")) == 1 })
			eventually(t, "ack", func() bool { return e.pending() == 0 })
		})
	}
}

// Row: UNKNOWN → DLQ for review, never retried automatically.
func TestUnknownDeadLettersForReview(t *testing.T) {
	e := newEnv(t)
	ag := e.supportAgent(agenttest.NewScriptedModel(agenttest.Fail(errors.New("something odd"))))
	e.startWorker("w1", ag, worker.Config{})
	e.publish(request("inv-odd", "s1", "hi"), nil)
	res := e.await("inv-odd")
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != "UNKNOWN" {
		t.Fatalf("result = %+v", res)
	}
	if en := e.dlqEntries(); len(en) != 1 || en[0].Retryable || !strings.Contains(en[0].Reason, "something odd") {
		t.Fatalf("dlq = %+v", en)
	}
}

// Row: bad input → DLQ as BAD_INPUT, Term().
func TestBadInputIsDeadLetteredAndTerminated(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel()
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxRequestBytes: 64 << 10})
	subj := e.sc.RequestSubject("support")
	e.publishRaw(subj, []byte("not json"), "bad-1", nil)
	e.publishRaw(subj, []byte(`{"v":9,"invocation_id":"bad-version","agent":"support","user_id":"u","session_id":"s","message":{"parts":[{"text":"x"}]}}`), "bad-2", nil)
	e.publishRaw(subj, []byte(`{"v":1,"invocation_id":"bad-missing","agent":"support"}`), "bad-3", nil)
	e.publishRaw(subj, []byte(`{"v":1,"invocation_id":"bad-big","agent":"support","user_id":"u","session_id":"s","message":{"parts":[{"text":"`+strings.Repeat("x", 100<<10)+`"}]}}`), "bad-4", nil)
	e.publishRaw(e.sc.RequestSubject("nobody"), []byte(`{"v":1,"invocation_id":"bad-agent","agent":"nobody","user_id":"u","session_id":"s","message":{"parts":[{"text":"x"}]}}`), "bad-5", nil)
	for _, id := range []string{"bad-version", "bad-missing", "bad-big", "bad-agent"} {
		if res := e.await(id); res.Status != envelope.StatusFailed || res.ErrorClass != "BAD_INPUT" {
			t.Fatalf("%s: result = %+v", id, res)
		}
	}
	eventually(t, "5 BAD_INPUT entries", func() bool { return len(e.dlqEntries()) == 5 })
	for _, en := range e.dlqEntries() {
		if en.Class != "BAD_INPUT" || en.Reason == "" || en.Retryable {
			t.Fatalf("entry = %+v", en)
		}
	}
	eventually(t, "terminated", func() bool {
		return e.pending() == 0 && w.count("_unknown", "bad_input")+w.count("support", "bad_input") == 5
	})
	// Regression (found in review, eighteenth session): the agent label is
	// one of the worker's agents or "_unknown", never a name a request
	// made up (a series per name, without bound).
	if n := w.count("nobody", "bad_input"); n != 0 {
		t.Errorf("a request for the agent %q made a series of its own (%v)", "nobody", n)
	}
	if llm.Calls() != 0 {
		t.Fatal("the model was called for bad input")
	}
}

// Row: session busy → NakWithDelay, then runs once the session is free.
// Busy Naks do not count towards the delivery limit.
func TestSessionBusyNaksWithDelay(t *testing.T) {
	e := newEnv(t)
	key := session.Key{App: "support", UserID: "u1", SessionID: "busy"}
	ctx := context.Background()
	if _, err := e.locker.Acquire(ctx, key, "someone-else", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("hello")))),
		worker.Config{MaxDeliveries: 1, SessionLease: time.Second})
	e.publish(request("inv-busy", "busy", "hi"), nil)
	// The other holder stays alive (renews) until the worker was turned away 3 times.
	for w.count("support", "nak_busy") < 3 {
		if _, err := e.locker.Renew(ctx, key, "someone-else", 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := e.locker.Release(ctx, key, "someone-else"); err != nil {
		t.Fatal(err)
	}
	if res := e.await("inv-busy"); res.Status != envelope.StatusCompleted || res.Attempts < 4 {
		t.Fatalf("result = %+v: busy Naks must not count towards the delivery limit", res)
	}
}

// Row: own infrastructure down (a tool's idempotency store) → NakWithDelay, nothing lost.
func TestInfrastructureFailureNaksAndKeepsMessage(t *testing.T) {
	e := newEnv(t)
	var down atomic.Bool
	down.Store(true)
	effect := tool.MustFunc("ledger", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		if down.Load() {
			return nil, &agent.SessionError{Op: "append", Err: errors.New("redis: connection refused")}
		}
		return tool.OK(nil), nil
	})
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Call("ledger", nil)))
	w := e.startWorker("w1", e.supportAgent(llm, effect), worker.Config{MaxDeliveries: 50})
	e.publish(request("inv-infra", "s1", "hi"), nil)
	eventually(t, "nak_infra", func() bool { return w.count("support", "nak_infra") >= 2 })
	if e.pending() != 1 || len(e.dlqEntries()) != 0 {
		t.Fatalf("message lost or dead-lettered during an infrastructure outage: pending=%d dlq=%d", e.pending(), len(e.dlqEntries()))
	}
	down.Store(false)
	llm.Push(agenttest.Reply(agenttest.Text("done")))
	if res := e.await("inv-infra"); res.Status != envelope.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
}

// Past the delivery limit a message is dead-lettered, never dropped.
func TestDeliveryLimitDeadLetters(t *testing.T) {
	e := newEnv(t)
	effect := tool.MustFunc("ledger", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		return nil, &agent.SessionError{Op: "append", Err: errors.New("down")}
	})
	var steps []agenttest.Step
	for range 10 {
		steps = append(steps, agenttest.Reply(agenttest.Call("ledger", nil)))
	}
	e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(steps...), effect), worker.Config{MaxDeliveries: 2})
	e.publish(request("inv-limit", "s1", "hi"), nil)
	res := e.await("inv-limit")
	if res.Status != envelope.StatusDeadLettered || res.Attempts != 3 {
		t.Fatalf("result = %+v", res)
	}
	if en := e.dlqEntries(); len(en) != 1 || !strings.Contains(en[0].Reason, "limit 2") || !strings.Contains(en[0].Reason, "without finishing") || !strings.Contains(en[0].Reason, "see the workers' logs") {
		t.Fatalf("dlq = %+v", en)
	}
	eventually(t, "acked", func() bool { return e.pending() == 0 })
}

// A completed invocation arriving again (after the duplicate window) is not run again.
func TestCompletedInvocationIsNotRunAgain(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel(refundScript("Refunded.")...)
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-dup", "s1", "refund A-1042"), nil)
	e.await("inv-dup")
	// Same invocation, different Nats-Msg-Id: JetStream's de-duplication does not catch it.
	data, _ := request("inv-dup", "s1", "refund A-1042").Encode()
	e.publishRaw(e.sc.RequestSubject("support"), data, "inv-dup-later", nil)
	eventually(t, "duplicate acked", func() bool { return w.count("support", "duplicate") == 1 && e.pending() == 0 })
	if llm.Calls() != 3 || len(e.orders.Refunds()) != 1 {
		t.Fatalf("duplicate ran again: calls=%d refunds=%d", llm.Calls(), len(e.orders.Refunds()))
	}
}

// Row: worker shutting down mid-invocation → stop at a step boundary, Nak(); another worker resumes.
func TestShutdownStopsAtStepBoundaryAndAnotherWorkerResumes(t *testing.T) {
	e := newEnv(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	slow := tool.MustFunc("slow_lookup", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		close(entered)
		<-release
		return tool.OK(nil), nil
	})
	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("refund_order", map[string]any{"order_id": "A-1042", "amount_cents": 1299.0})),
		agenttest.Reply(agenttest.Call("slow_lookup", nil)),
		agenttest.Reply(agenttest.Text("Refunded after the lookup.")),
	)
	ag := e.supportAgent(llm, slow)
	w1 := e.startWorker("w1", ag, worker.Config{DrainTimeout: 50 * time.Millisecond})
	e.publish(request("inv-drain", "s1", "refund A-1042"), nil)
	<-entered
	w1.cancel() // SIGTERM while the slow tool runs
	time.AfterFunc(200*time.Millisecond, func() { close(release) })
	<-w1.done
	if w1.err != nil {
		t.Fatal(w1.err)
	}
	if n := w1.count("support", "nak_stopped"); n != 1 {
		t.Fatalf("nak_stopped = %v, want 1", n)
	}
	if llm.Calls() != 2 {
		t.Fatalf("model calls = %d: the next step must not start after the stop", llm.Calls())
	}
	w2 := e.startWorker("w2", ag, worker.Config{})
	res := e.await("inv-drain")
	if res.Status != envelope.StatusCompleted || res.Content != "Refunded after the lookup." {
		t.Fatalf("result = %+v", res)
	}
	if len(e.orders.Refunds()) != 1 || llm.Calls() != 3 {
		t.Fatalf("refunds=%d calls=%d, want 1 refund and 3 calls", len(e.orders.Refunds()), llm.Calls())
	}
	eventually(t, "acked", func() bool { return e.pending() == 0 && w2.count("support", "completed") == 1 })
}
