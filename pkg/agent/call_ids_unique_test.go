package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// answersOf returns the function calls of contents and the function
// responses of the turn right after each turn holding calls, in order.
func answersOf(contents []*model.Content) (calls []*model.FunctionCall, answers []map[string]any) {
	for i, c := range contents {
		fcs := c.FunctionCalls()
		if len(fcs) == 0 {
			continue
		}
		calls = append(calls, fcs...)
		if i+1 < len(contents) {
			for _, fr := range contents[i+1].FunctionResponses() {
				answers = append(answers, fr.Response)
			}
		}
	}
	return calls, answers
}

// Regression (found in review, twentieth session): a provider that repeats
// a tool-call id within one response (OpenAI-compatible servers that number
// calls per response, or a buggy adapter) made two calls whose results the
// loop paired by id only: the model's next request carried both calls but
// only the first one's answer. Gemini refuses a call turn whose responses
// do not match its calls in number (a BAD_REQUEST that pages), and the
// model never learned order A-1002's status.
func TestDuplicateCallIDsInOneResponseBothAnswered(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Calls(
			&model.FunctionCall{ID: "call_0", Name: support.GetOrderTool, Args: map[string]any{"order_id": "A-1001"}},
			&model.FunctionCall{ID: "call_0", Name: support.GetOrderTool, Args: map[string]any{"order_id": "A-1002"}},
		)),
		agenttest.Reply(agenttest.Text("done")),
	)
	if _, err := f.run(t, "inv-dup-1", "status of A-1001 and A-1002?"); err != nil {
		t.Fatal(err)
	}
	reqs := f.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	calls, answers := answersOf(reqs[1].Contents)
	if len(calls) != 2 {
		t.Fatalf("second request holds %d calls, want 2", len(calls))
	}
	if len(answers) != len(calls) {
		t.Fatalf("second request answers %d of its %d function calls (duplicate id %q): the provider rejects the turn, and the model never sees the second order's result", len(answers), len(calls), "call_0")
	}
	var all strings.Builder
	for _, a := range answers {
		b, _ := json.Marshal(a)
		all.Write(b)
	}
	for _, id := range []string{"A-1001", "A-1002"} {
		if !strings.Contains(all.String(), id) {
			t.Errorf("no answer sent to the model mentions %s: %s", id, all.String())
		}
	}
}

// Regression (found in review, twentieth session): a provider that reuses
// a tool-call id across steps ("call_0" in every response: OpenAI-
// compatible servers that number calls per response) made the loop answer
// the second step's call (a refund) with nothing: the refund result,
// stored in the session, never reached the model, whose next request held
// a call without a response.
func TestCallIDReusedAcrossStepsKeepsItsOwnAnswer(t *testing.T) {
	get := agenttest.Calls(&model.FunctionCall{ID: "call_0", Name: support.GetOrderTool, Args: map[string]any{"order_id": "A-1042"}})
	ref := agenttest.Calls(&model.FunctionCall{ID: "call_0", Name: support.RefundOrderTool, Args: map[string]any{"order_id": "A-1042", "amount_cents": float64(500), "reason": "damaged"}})
	f := newFixture(t,
		agenttest.Reply(get),
		agenttest.Reply(ref),
		agenttest.Reply(agenttest.Text("refunded")),
	)
	if _, err := f.run(t, "inv-dup-2", "refund 5 on A-1042"); err != nil {
		t.Fatal(err)
	}
	reqs := f.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model calls = %d, want 3", len(reqs))
	}
	if u := unansweredCall(reqs[2].Contents); u != "" {
		t.Fatalf("third request: %s: the refund's result never reaches the model", u)
	}
	_, answers := answersOf(reqs[2].Contents)
	found := false
	for _, a := range answers {
		b, _ := json.Marshal(a)
		if strings.Contains(string(b), "refund") {
			found = true
		}
	}
	if !found {
		t.Errorf("no answer in the third request is the refund's result: %v", answers)
	}
}

// Regression (found in review, twentieth session): the same reuse across
// steps on resume. The second step's call failed (escalated; a crash
// before its held response was written leaves the same session), and the
// resumed run must run it again. pendingCalls paired responses by id only,
// took the first step's answer for it, and the call was never run: the
// model went on as if it had been.
func TestCallIDReusedAcrossStepsIsRunOnResume(t *testing.T) {
	runs := 0
	pay := failingTool{name: "pay", run: func(ctx context.Context, args map[string]any) (map[string]any, error) {
		runs++
		if runs == 1 {
			return nil, context.DeadlineExceeded // escalates: no on-tool-error callback
		}
		return map[string]any{"status": "ok", "paid": true}, nil
	}}
	f := newFixture(t,
		agenttest.Reply(agenttest.Calls(&model.FunctionCall{ID: "call_0", Name: support.GetOrderTool, Args: map[string]any{"order_id": "A-1042"}})),
		agenttest.Reply(agenttest.Calls(&model.FunctionCall{ID: "call_0", Name: "pay", Args: map[string]any{}})),
		agenttest.Reply(agenttest.Text("paid")),
	)
	f.agent.Tools = append(f.agent.Tools, pay)
	if _, err := f.run(t, "inv-dup-3", "pay A-1042"); err == nil {
		t.Fatal("first run succeeded; want the pay tool's escalation")
	}
	if _, err := f.run(t, "inv-dup-3", "pay A-1042"); err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Fatalf("pay ran %d time(s) over the two runs, want 2: the resumed run took the first step's answer (same id) for it and never ran it", runs)
	}
}

// Regression (found in review, twentieth session): the user-visible cost
// of pairing by id only. The refund ran (step 1, "call_0"), a look-up
// reused the id (step 2), and the next model call failed for good. The
// degraded message is built from CallbackContext.CompletedTools, which
// kept one call per id (the last): it did not name the refund, so the user
// was not told it went through, the seed's "a message saying nothing
// happened may be false".
func TestCallIDReuseDegradedMessageNamesTheRefund(t *testing.T) {
	ref := agenttest.Calls(&model.FunctionCall{ID: "call_0", Name: support.RefundOrderTool, Args: map[string]any{"order_id": "A-1042", "amount_cents": float64(500), "reason": "damaged"}})
	get := agenttest.Calls(&model.FunctionCall{ID: "call_0", Name: support.GetOrderTool, Args: map[string]any{"order_id": "A-1042"}})
	f := newFixture(t,
		agenttest.Reply(ref),
		agenttest.Reply(get),
		agenttest.Fail(&model.ProviderError{Provider: "sim", StatusCode: 503, Status: "UNAVAILABLE"}),
	)
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{})}
	evs, err := f.run(t, "inv-dup-4", "refund 5 on A-1042")
	if err != nil {
		t.Fatal(err)
	}
	final := evs[len(evs)-1]
	if !final.Substituted {
		t.Fatalf("last event is not the degraded answer: %+v", final)
	}
	if msg := final.Content.Text(); !strings.Contains(msg, support.RefundOrderTool) {
		t.Fatalf("degraded message %q does not name the refund that went through (its call id was reused by a later call)", msg)
	}
}

// legacyEvents returns events of invocation inv as a loop stored them
// before it made call ids unique: every call of every response is "call_0".
// Step 1 refunds A-1042; step 2 looks up A-1001 and A-1002 in one response;
// step 3 calls pay, whose response is stored only when withPay.
func legacyEvents(inv string, withPay bool) []*session.Event {
	call := func(name string, args map[string]any) *model.Part {
		return &model.Part{FunctionCall: &model.FunctionCall{ID: "call_0", Name: name, Args: args}}
	}
	answer := func(name string, resp map[string]any) *model.Part {
		return &model.Part{FunctionResponse: &model.FunctionResponse{ID: "call_0", Name: name, Response: resp}}
	}
	modelTurn := func(parts ...*model.Part) *session.Event {
		return &session.Event{InvocationID: inv, Author: "support", Content: &model.Content{Role: model.RoleModel, Parts: parts}}
	}
	toolTurn := func(parts ...*model.Part) *session.Event {
		return &session.Event{InvocationID: inv, Author: "support", Content: &model.Content{Role: model.RoleUser, Parts: parts}}
	}
	evs := []*session.Event{
		{InvocationID: inv, Author: session.AuthorUser, Content: model.NewTextContent(model.RoleUser, "refund A-1042, then status of A-1001 and A-1002, then pay")},
		modelTurn(call(support.RefundOrderTool, map[string]any{"order_id": "A-1042", "amount_cents": float64(500), "reason": "damaged"})),
		toolTurn(answer(support.RefundOrderTool, map[string]any{"status": "ok", "answer": "refund A-1042"})),
		modelTurn(call(support.GetOrderTool, map[string]any{"order_id": "A-1001"}), call(support.GetOrderTool, map[string]any{"order_id": "A-1002"})),
		toolTurn(answer(support.GetOrderTool, map[string]any{"status": "ok", "answer": "order A-1001"}), answer(support.GetOrderTool, map[string]any{"status": "ok", "answer": "order A-1002"})),
		modelTurn(call("pay", map[string]any{})),
	}
	if withPay {
		evs = append(evs, toolTurn(answer("pay", map[string]any{"status": "ok", "answer": "paid"})), modelTurn(&model.Part{Text: "done"}))
	}
	return evs
}

// storeEvents appends evs to the fixture's session as they are.
func (f *fixture) storeEvents(t *testing.T, evs []*session.Event) {
	t.Helper()
	key := session.Key{App: "support", UserID: "u1", SessionID: "s1"}
	if err := session.AppendEvents(context.Background(), f.sessions, key, evs); err != nil {
		t.Fatal(err)
	}
}

// Regression (found in review, twentieth session): a session stored before
// the loop made call ids unique holds "call_0" for every call. The next
// invocation's request must answer each of those calls with its own
// response (responses pair with calls by id and position), not every one
// with the first "call_0" answer of the session.
func TestStoredDuplicateCallIDsAnswerEachCallWithItsOwnResponse(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("hello again")))
	f.storeEvents(t, legacyEvents("inv-old", true))
	if _, err := f.run(t, "inv-new", "thanks"); err != nil {
		t.Fatal(err)
	}
	contents := f.model.Requests()[0].Contents
	if u := unansweredCall(contents); u != "" {
		t.Fatal(u)
	}
	want := []string{"refund A-1042", "order A-1001", "order A-1002", "paid"}
	calls, answers := answersOf(contents)
	if len(calls) != len(want) || len(answers) != len(want) {
		t.Fatalf("%d calls and %d answers in the request, want %d each", len(calls), len(answers), len(want))
	}
	for i, a := range answers {
		if a["answer"] != want[i] {
			t.Errorf("call %d (%s %v) is answered with %v, want the answer %q", i, calls[i].Name, calls[i].Args, a, want[i])
		}
	}
}

// Regression (found in review, twentieth session): in a session stored
// before the loop made call ids unique, the last step's call ("call_0",
// like the calls of the earlier steps, which have responses) has none: a
// resumed run must run it, not take an earlier step's answer for it.
func TestStoredDuplicateCallIDWithoutResponseRunsOnResume(t *testing.T) {
	runs := 0
	pay := failingTool{name: "pay", run: func(ctx context.Context, args map[string]any) (map[string]any, error) {
		runs++
		return map[string]any{"status": "ok", "answer": "paid"}, nil
	}}
	f := newFixture(t, agenttest.Reply(agenttest.Text("paid")))
	f.agent.Tools = append(f.agent.Tools, pay)
	f.storeEvents(t, legacyEvents("inv-old", false))
	if _, err := f.run(t, "inv-old", ""); err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Fatalf("pay ran %d time(s) on resume, want 1", runs)
	}
	_, answers := answersOf(f.model.Requests()[0].Contents)
	if len(answers) != 4 || answers[3]["answer"] != "paid" {
		t.Fatalf("the resumed run's request answers the calls with %v, want pay's own answer last", answers)
	}
}
