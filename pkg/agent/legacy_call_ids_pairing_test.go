package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twentieth session): CompletedToolsOf paired
// by id only and kept the last response per id, while buildContents and
// pendingCalls pair stored duplicates by position (pairResponses). An
// invocation stored before the loop made call ids unique, with "call_0" for
// every call, resumed after the upgrade, handed the degraded-answer
// callback one completed tool (the last): the refund that went through was
// not named.
func TestLegacyDuplicateCallIDsDegradedMessageNamesTheRefund(t *testing.T) {
	pay := failingTool{name: "pay", run: func(ctx context.Context, args map[string]any) (map[string]any, error) {
		return map[string]any{"status": "ok", "answer": "paid"}, nil
	}}
	f := newFixture(t, agenttest.Fail(&model.ProviderError{Provider: "sim", StatusCode: 503, Status: "UNAVAILABLE"}))
	f.agent.Tools = append(f.agent.Tools, pay)
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{})}
	f.storeEvents(t, legacyEvents("inv-old", false))
	evs, err := f.run(t, "inv-old", "")
	if err != nil {
		t.Fatal(err)
	}
	final := evs[len(evs)-1]
	if !final.Substituted {
		t.Fatalf("last event is not the degraded answer: %+v", final)
	}
	if msg := final.Content.Text(); !strings.Contains(msg, support.RefundOrderTool) {
		t.Fatalf("degraded message %q does not name the refund of the resumed legacy invocation (CompletedToolsOf keeps one call per id)", msg)
	}
}

// Regression (found in review, twentieth session): the same inconsistency,
// direct: four calls with four responses, all "call_0", gave one completed
// tool.
func TestCompletedToolsOfLegacyDuplicateCallIDs(t *testing.T) {
	got := agent.CompletedToolsOf(legacyEvents("inv-old", true))
	if len(got) != 4 {
		t.Fatalf("CompletedToolsOf = %d tools (%+v), want 4 (refund, two look-ups, pay), as pairResponses pairs them", len(got), got)
	}
}

// Regression (found in review, twentieth session): pairResponses paired a
// response with the first open call of the last event holding its id. A
// legacy step whose response carried two calls with one id, where the
// first call escalated and the second succeeded, stored only the second's
// response (runTools keeps the others' results). pairResponses gave that
// response to the first call: on resume the failed call (pay) was never
// run and the succeeded one (lookup) ran again. The names differ, so the
// response's Name tells them apart.
func TestLegacyPartialStepDuplicateCallIDsResumeRunsTheFailedCall(t *testing.T) {
	payRuns, lookupRuns := 0, 0
	pay := failingTool{name: "pay", run: func(ctx context.Context, args map[string]any) (map[string]any, error) {
		payRuns++
		return map[string]any{"status": "ok", "answer": "paid"}, nil
	}}
	lookup := failingTool{name: "lookup", run: func(ctx context.Context, args map[string]any) (map[string]any, error) {
		lookupRuns++
		return map[string]any{"status": "ok", "answer": "found"}, nil
	}}
	f := newFixture(t, agenttest.Reply(agenttest.Text("done")))
	f.agent.Tools = append(f.agent.Tools, pay, lookup)
	inv := "inv-old-partial"
	f.storeEvents(t, []*session.Event{
		{InvocationID: inv, Author: session.AuthorUser, Content: model.NewTextContent(model.RoleUser, "pay and look up")},
		{InvocationID: inv, Author: "support", Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{
			{FunctionCall: &model.FunctionCall{ID: "call_0", Name: "pay", Args: map[string]any{}}},
			{FunctionCall: &model.FunctionCall{ID: "call_0", Name: "lookup", Args: map[string]any{}}},
		}}},
		// pay escalated; lookup's response was stored by the end's flush.
		{InvocationID: inv, Author: "support", Content: &model.Content{Role: model.RoleUser, Parts: []*model.Part{
			{FunctionResponse: &model.FunctionResponse{ID: "call_0", Name: "lookup", Response: map[string]any{"status": "ok", "answer": "found"}}},
		}}},
	})
	if _, err := f.run(t, inv, ""); err != nil {
		t.Fatal(err)
	}
	if payRuns != 1 || lookupRuns != 0 {
		t.Fatalf("on resume pay ran %d time(s), lookup %d: want pay (the failed call) once and lookup (answered) not again", payRuns, lookupRuns)
	}
}

// Regression (found in review, twentieth session): a legacy model call that
// yielded two complete responses (SameCall), each with "call_0". The tool
// step's responses are in call order (mergeCalls: the first event's calls
// first), but pairResponses paired the first response with the last
// event's call: the two answers were swapped in the next request.
func TestLegacySameCallDuplicateCallIDsNotSwapped(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("hello again")))
	inv := "inv-old-samecall"
	call := func(order string) *session.Event {
		return &session.Event{InvocationID: inv, Author: "support", Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{
			{FunctionCall: &model.FunctionCall{ID: "call_0", Name: support.GetOrderTool, Args: map[string]any{"order_id": order}}},
		}}}
	}
	second := call("A-1002")
	second.SameCall = true
	f.storeEvents(t, []*session.Event{
		{InvocationID: inv, Author: session.AuthorUser, Content: model.NewTextContent(model.RoleUser, "status of A-1001 and A-1002")},
		call("A-1001"),
		second,
		{InvocationID: inv, Author: "support", Content: &model.Content{Role: model.RoleUser, Parts: []*model.Part{
			{FunctionResponse: &model.FunctionResponse{ID: "call_0", Name: support.GetOrderTool, Response: map[string]any{"status": "ok", "answer": "order A-1001"}}},
			{FunctionResponse: &model.FunctionResponse{ID: "call_0", Name: support.GetOrderTool, Response: map[string]any{"status": "ok", "answer": "order A-1002"}}},
		}}},
		{InvocationID: inv, Author: "support", Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{{Text: "both shipped"}}}},
	})
	if _, err := f.run(t, "inv-new", "thanks"); err != nil {
		t.Fatal(err)
	}
	calls, answers := answersOf(f.model.Requests()[0].Contents)
	if len(calls) != 2 || len(answers) != 2 {
		t.Fatalf("%d calls, %d answers", len(calls), len(answers))
	}
	for i, c := range calls {
		if want := "order " + c.Args["order_id"].(string); answers[i]["answer"] != want {
			t.Errorf("call %d (%v) answered with %v, want %q", i, c.Args, answers[i], want)
		}
	}
}
