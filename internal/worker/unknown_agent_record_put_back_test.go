package worker_test

import (
	"context"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review of this session's fix, twenty-fourth session): a worker without
// the request's agent answered from the record only a finished invocation,
// and refused as BAD_INPUT ("unknown agent") a request whose record said
// running (a duplicate while a worker with the agent was running it: the
// user got "failed: rejected" and then "completed", and on-call a BAD_INPUT
// entry of completed work) and a replay of a dead letter (its DLQ entry
// already deleted by the replayer: "rejected: unknown agent" replaced the
// "queued" of work that was only waiting). A record proves a worker of the
// fleet runs the agent: such a request is put back (a busy session's
// NakWithDelay, or nak_no_agent when the session is free) for a worker
// that runs it, and refused only from its MaxDeliveries-th delivery on,
// with a reason saying no worker that took it runs the agent.

// noAgentWorker starts a worker that runs only the "billing" agent, on the
// same consumer as the support workers (a mixed fleet), with the given
// MaxDeliveries.
func (e *env) noAgentWorker(name string, maxDeliveries int) *running {
	ag := e.supportAgent(agenttest.NewScriptedModel())
	ag.Name = "billing"
	return e.startWorker(name, ag, worker.Config{MaxDeliveries: maxDeliveries})
}

func TestRunningInvocationOnAWorkerWithoutItsAgentIsPutBack(t *testing.T) {
	e := newEnv(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := model.Func{ModelName: "slow", Generate: func(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			once.Do(func() { close(entered) })
			select {
			case <-release:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
			yield(agenttest.Text("refunded"), nil)
		}
	}}
	w1 := e.startWorker("w1", e.supportAgent(slow), worker.Config{Concurrency: 1})
	req := request("inv-running-no-agent", "s-run", "refund my order")
	e.publish(req, nil)
	<-entered // the record says running; w1 is in its model call

	w2 := e.billingWorker("w2")
	e.publishCopy(req, nil)
	eventually(t, "the duplicate handled by the worker without the agent", func() bool {
		return w2.count("_unknown", "bad_input")+w2.count("_unknown", "nak_busy")+w2.count("_unknown", "nak_no_agent")+
			w2.count("_unknown", "nak_infra")+w2.count("_unknown", "duplicate") > 0
	})
	close(release)
	var answers []string
	for {
		r := e.await("inv-running-no-agent")
		answers = append(answers, string(r.Status)+" "+r.ErrorClass)
		if r.Status == envelope.StatusCompleted {
			break
		}
	}
	eventually(t, "w1 acked and the duplicate handled", func() bool { return w1.count("support", "completed") == 1 && e.pending() == 0 })
	t.Logf("answers in order: %q; w2 nak_busy=%v bad_input=%v duplicate=%v; DLQ entries %d", answers,
		w2.count("_unknown", "nak_busy"), w2.count("_unknown", "bad_input"), w2.count("_unknown", "duplicate"), len(e.dlqEntries()))
	if len(answers) != 1 || len(e.dlqEntries()) != 0 {
		t.Errorf("the user got %q and the DLQ holds %d entries for an invocation that completed once, want one answer (completed) and no entry",
			answers, len(e.dlqEntries()))
	}
}

// A running record no worker holds the session of (its run died): put back
// for a worker with the agent, which resumes it.
func TestCrashedRunOnAWorkerWithoutItsAgentIsPutBack(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request("inv-crashed-no-agent", "s-crash", "refund my order")
	if err := e.invs.Transition(ctx, &session.Invocation{ID: req.InvocationID, Status: session.InvocationRunning,
		Session: session.Key{App: "support", UserID: req.UserID, SessionID: req.SessionID}}); err != nil {
		t.Fatal(err)
	}
	w2 := e.noAgentWorker("w2", 100)
	e.publish(req, nil)
	eventually(t, "put back by the worker without the agent", func() bool { return w2.count("_unknown", "nak_no_agent") > 0 })
	e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("refunded")))), worker.Config{})
	res := e.await(req.InvocationID)
	eventually(t, "the request acked", func() bool { return e.pending() == 0 })
	t.Logf("first answer %s %s %q; w2 nak_no_agent=%v bad_input=%v", res.Status, res.ErrorClass, res.Content,
		w2.count("_unknown", "nak_no_agent"), w2.count("_unknown", "bad_input"))
	if res.Status != envelope.StatusCompleted || w2.count("_unknown", "bad_input") != 0 || len(e.dlqEntries()) != 0 {
		t.Errorf("first answer %s %s, %d DLQ entries, want completed and none", res.Status, res.ErrorClass, len(e.dlqEntries()))
	}
}

// A replay of a dead letter (the replayer deleted its entry) waits for a
// worker with its agent instead of replacing "queued" with "rejected".
func TestReplayOnAWorkerWithoutItsAgentIsPutBack(t *testing.T) {
	e := newEnv(t)
	w1 := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}))), worker.Config{})
	req := request("inv-replay-no-agent", "s-rp", "refund my order")
	e.publish(req, nil)
	if first := e.await(req.InvocationID); first.UserMessage != worker.MsgQueued {
		t.Fatalf("precondition: %+v, want queued", first)
	}
	eventually(t, "the request acked", func() bool { return e.pending() == 0 })
	w1.shutdown(t)
	w2 := e.noAgentWorker("w2", 100)
	e.publishCopy(req, map[string]string{envelope.HeaderReplayCount: "1", envelope.HeaderResume: "true"})
	eventually(t, "the replay handled", func() bool {
		return w2.count("_unknown", "bad_input")+w2.count("_unknown", "nak_busy")+w2.count("_unknown", "nak_no_agent")+w2.count("_unknown", "nak_infra") > 0
	})
	last := e.lastResult(req.InvocationID)
	t.Logf("nak_no_agent=%v bad_input=%v; last result %s %s %q", w2.count("_unknown", "nak_no_agent"), w2.count("_unknown", "bad_input"),
		last.Status, last.ErrorClass, last.UserMessage)
	if last.UserMessage != worker.MsgQueued {
		t.Errorf("the last result is %s %s %q: a replay waiting for a worker with its agent was answered as a rejected request",
			last.Status, last.ErrorClass, last.UserMessage)
	}
	// A worker with the agent runs it.
	e.startWorker("w3", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("refunded")))), worker.Config{})
	if res := e.await(req.InvocationID); res.Status != envelope.StatusCompleted {
		t.Errorf("replay answered %s %s %q, want completed by the worker with the agent", res.Status, res.ErrorClass, res.UserMessage)
	}
	eventually(t, "the replay acked", func() bool { return e.pending() == 0 })
	if n := w2.count("_unknown", "bad_input"); n != 0 {
		t.Errorf("bad_input=%v, want the replay never refused", n)
	}
}

// A fleet that no longer runs the agent does not put the request back for
// ever: the MaxDeliveries-th time a worker without it is given the
// request, it refuses it, saying why.
func TestReplayForAnAgentNoWorkerRunsIsRefusedAfterMaxDeliveriesLandings(t *testing.T) {
	e := newEnv(t)
	w1 := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}))), worker.Config{})
	req := request("inv-agent-gone", "s-gone", "refund my order")
	e.publish(req, nil)
	e.await(req.InvocationID)
	eventually(t, "the request acked", func() bool { return e.pending() == 0 })
	w1.shutdown(t)
	const limit = 3
	w2 := e.noAgentWorker("w2", limit)
	e.publishCopy(req, map[string]string{envelope.HeaderReplayCount: "1"})
	eventually(t, "the replay refused", func() bool { return w2.count("_unknown", "bad_input") == 1 && e.pending() == 0 })
	last := e.lastResult(req.InvocationID)
	t.Logf("nak_no_agent=%v; last result %s %s %q", w2.count("_unknown", "nak_no_agent"), last.Status, last.ErrorClass, last.UserMessage)
	if n := w2.count("_unknown", "nak_no_agent"); n != limit-1 {
		t.Errorf("put back %v times, want %d (then refused on delivery %d)", n, limit-1, limit)
	}
	if last.Status != envelope.StatusFailed || last.ErrorClass != string(taxonomy.BadInput) || !strings.Contains(last.UserMessage, "no worker that runs the agent took it") {
		t.Errorf("last result %s %s %q, want failed BAD_INPUT saying no worker runs the agent", last.Status, last.ErrorClass, last.UserMessage)
	}
}
