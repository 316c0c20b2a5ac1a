package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// unansweredCall returns a description of the first function call in
// contents that is not answered by the turn right after it (buildContents'
// promise: "every function call is answered in the turn that follows it",
// which the providers require: OpenAI refuses an assistant tool_calls
// message not followed by its tool messages, Gemini a function call turn
// not followed by its function responses), or "".
func unansweredCall(contents []*model.Content) string {
	for i, c := range contents {
		calls := c.FunctionCalls()
		if len(calls) == 0 {
			continue
		}
		answered := map[string]bool{}
		if i+1 < len(contents) {
			for _, fr := range contents[i+1].FunctionResponses() {
				answered[fr.ID] = true
			}
		}
		for _, fc := range calls {
			if !answered[fc.ID] {
				next := "nothing"
				if i+1 < len(contents) {
					next = fmt.Sprintf("a %s turn %q", contents[i+1].Role, contents[i+1].Text())
				}
				return fmt.Sprintf("call %s (%s) in turn %d is followed by %s", fc.ID, fc.Name, i, next)
			}
		}
	}
	return ""
}

// An invocation that stopped after its model response asked for a tool (the
// tool escalated an error here; a worker crash mid-tool or a lost lock
// leaves the same session) keeps an unanswered function call in the
// session. The next invocation of the same session (the user's next
// message, which the worker runs as soon as the session lock is free) and
// the first invocation's own resume (its redelivery or DLQ replay, which
// runs the call and appends its response after the other invocation's
// events) must still send the model a conversation in which every call is
// answered by the turn that follows it. buildContents replays the session's
// events in store order, so both requests carry a call followed by a user
// turn, which the providers reject (a BAD_REQUEST that dead-letters every
// later invocation of the session).
func TestInterleavedInvocationKeepsCallsAnswered(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	type lookupArgs struct {
		OrderID string `json:"order_id"`
	}
	lookup, err := tool.NewFunc("lookup", "Look an order up.", func(ctx context.Context, a lookupArgs) (map[string]any, error) {
		if failing.Load() {
			return nil, errors.New("orders service unavailable")
		}
		return map[string]any{"status": "shipped"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("lookup", map[string]any{"order_id": "A-1"})), // inv-a
		agenttest.Reply(agenttest.Text("hello there")),                               // inv-b
		agenttest.Reply(agenttest.Text("A-1 has shipped")),                           // inv-a resumed
	)
	sessions := session.NewMemory()
	r := &agent.Runner{Agent: &agent.Agent{Name: "support", Model: m, Tools: []tool.Tool{lookup}}, Sessions: sessions}
	run := func(id, text string) error {
		_, err := r.Invoke(context.Background(), agent.RunRequest{InvocationID: id, UserID: "u1", SessionID: "s1",
			Message: model.NewTextContent(model.RoleUser, text)})
		return err
	}

	var te *agent.ToolError
	if err := run("inv-a", "where is A-1?"); !errors.As(err, &te) {
		t.Fatalf("inv-a = %v, want the escalated *ToolError", err)
	}
	if err := run("inv-b", "hi"); err != nil {
		t.Fatalf("inv-b: %v", err)
	}
	failing.Store(false)
	if err := run("inv-a", "where is A-1?"); err != nil {
		t.Fatalf("inv-a resumed: %v", err)
	}

	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	for i, name := range []string{"inv-a", "inv-b", "inv-a resumed"} {
		if bad := unansweredCall(reqs[i].Contents); bad != "" {
			t.Errorf("the model request of %s has an unanswered function call: %s", name, bad)
		}
	}
}
