package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
)

// Regression (found in review, eighteenth session): an on-tool-error
// callback turns a tool's failure into the function
// response. Whatever it returns answers a failure, and everything in a
// function response is model input that may be echoed to the user, so the
// loop's sanitiser must cover it. A callback in the ADK Python style,
// {"error": err.Error()}, has neither "status" nor "reason", so tool.Sanitize
// took it for a success and passed the database host, user and SQL to the
// model unchanged; the loop now sanitises such a map whatever its shape.
func TestOnToolErrorMapIsSanitisedWhateverItsShape(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Call("db", nil)), agenttest.Reply(agenttest.Text("sorry")))
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "db", run: func(context.Context, map[string]any) (map[string]any, error) {
		return nil, errors.New(`pq: SELECT balance FROM accounts WHERE id = 7: dial tcp orders-db.prod.internal:5432: password=hunter2 connection refused`)
	}})
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{func(_ context.Context, _ *agent.CallbackContext, _ *agent.ToolCall, err error) (map[string]any, error) {
		return map[string]any{"error": err.Error()}, nil
	}}
	sent := functionResponsesInSecondCall(t, f)
	for _, leak := range []string{"orders-db.prod.internal", "hunter2", "SELECT balance"} {
		if strings.Contains(sent, leak) {
			t.Errorf("the model was sent %q in the failed tool's response: %s", leak, sent)
		}
	}
}

// Regression (found in review, eighteenth session): the same holds for the
// map an on-tool-error callback returns for a call to an unregistered
// tool.
func TestOnToolErrorMapForAnUnknownToolIsSanitised(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Call("no_such_tool", nil)), agenttest.Reply(agenttest.Text("sorry")))
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{func(_ context.Context, _ *agent.CallbackContext, _ *agent.ToolCall, err error) (map[string]any, error) {
		return map[string]any{"error": err.Error() + ": registry at dial tcp tools.prod.internal:8500: password=hunter2"}, nil
	}}
	sent := functionResponsesInSecondCall(t, f)
	if sent == "" {
		t.Fatal("no function response was sent to the model")
	}
	for _, leak := range []string{"tools.prod.internal", "hunter2"} {
		if strings.Contains(sent, leak) {
			t.Errorf("the model was sent %q in the unknown tool's response: %s", leak, sent)
		}
	}
}

// functionResponsesInSecondCall runs f once, requires the model to have been
// called twice, and returns the function responses the second call was sent,
// as text.
func functionResponsesInSecondCall(t *testing.T, f *fixture) string {
	t.Helper()
	if _, err := f.run(t, "inv-1", "what is my balance?"); err != nil {
		t.Fatal(err)
	}
	reqs := f.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	var sent string
	for _, c := range reqs[1].Contents {
		for _, fr := range c.FunctionResponses() {
			sent += fmt.Sprint(fr.Response)
		}
	}
	return sent
}
