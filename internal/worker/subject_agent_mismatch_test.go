package worker_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// TestSubjectAgentMismatchIsBadInput: a request whose body names another
// agent than its subject (agent.requests.<agent>, DESIGN.md) is refused as
// BAD_INPUT without a model call. Publish permissions are granted per
// subject, so running the body's agent would let a producer allowed only
// agent.requests.other run the support agent, with its refunds.
//
// Regression (found in review, twenty-second session): the worker ran the
// body's agent whatever the subject.
func TestSubjectAgentMismatchIsBadInput(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel()
	llm.Push(agenttest.Reply(agenttest.Text("should not run")))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	const id = "inv-wrong-subject"
	e.publishRaw(e.sc.RequestSubject("other"),
		[]byte(`{"v":1,"invocation_id":"`+id+`","agent":"support","user_id":"u","session_id":"s","message":{"parts":[{"text":"refund A-1"}]}}`), id, nil)
	res := e.await(id)
	if res.Status != envelope.StatusFailed || res.ErrorClass != "BAD_INPUT" {
		t.Fatalf("result %+v, want failed BAD_INPUT", res)
	}
	if !strings.Contains(res.UserMessage, "does not match the subject") {
		t.Fatalf("user message %q does not say what is wrong", res.UserMessage)
	}
	if n := llm.Calls(); n != 0 {
		t.Fatalf("the model was called %d times for a request on another agent's subject", n)
	}
	entries := e.dlqEntries()
	if len(entries) != 1 || entries[0].Class != "BAD_INPUT" {
		t.Fatalf("DLQ entries %+v, want one BAD_INPUT entry", entries)
	}
}
