package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

func TestHappyPathRefund(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(getOrder("A-1042")),
		agenttest.Reply(refund("A-1042", 1299, "damaged")),
		agenttest.Reply(agenttest.Text("Refunded 12.99 for A-1042.")),
	)
	events, err := f.run(t, "inv-1", "Please refund order A-1042")
	if err != nil {
		t.Fatal(err)
	}
	if got := agenttest.FinalText(events); got != "Refunded 12.99 for A-1042." {
		t.Fatalf("final text = %q", got)
	}
	if got := len(f.orders.Refunds()); got != 1 {
		t.Fatalf("refunds = %d, want 1", got)
	}
	if f.orders.Refunds()[0].InvocationID != "inv-1" {
		t.Fatalf("refund did not see its invocation id: %+v", f.orders.Refunds()[0])
	}
	// Every yielded event is in the session, after the user message, in order.
	sess := f.session(t)
	if sess.Events[0].Author != session.AuthorUser {
		t.Fatalf("first event author = %q, want user", sess.Events[0].Author)
	}
	agenttest.RequireEventIDs(t, &session.Session{Events: sess.Events[1:]}, events)
	// The model saw the tool result it asked for, paired by call id.
	reqs := f.model.Requests()
	last := reqs[2].Contents
	fr := last[len(last)-1].FunctionResponses()
	if len(fr) != 1 || fr[0].Name != support.RefundOrderTool || fr[0].Response["status"] != "ok" {
		t.Fatalf("third model call did not get the refund result: %+v", last[len(last)-1])
	}
	fc := last[len(last)-2].FunctionCalls()
	if len(fc) != 1 || fc[0].ID == "" || fc[0].ID != fr[0].ID {
		t.Fatalf("function call and response ids not paired: call %+v response %+v", fc, fr)
	}
	if reqs[0].SystemInstruction != support.Instruction || len(reqs[0].Tools) != 2 {
		t.Fatalf("request lacks instruction or tools: %+v", reqs[0])
	}
}

func TestToolErrorBecomesMapAndModelContinues(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Call("slow", nil)),
		agenttest.Reply(agenttest.Text("The lookup timed out; please try later.")),
	)
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "slow", run: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		return nil, fmt.Errorf("orders backend: %w", context.DeadlineExceeded)
	}})
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{agent.ClassifyToolError()}
	events, err := f.run(t, "inv-1", "where is my order")
	if err != nil {
		t.Fatalf("invocation failed: %v", err)
	}
	m := agenttest.ResponseFor(t, events, "slow")
	if m["status"] != "error" || m["reason"] != "timeout" || m["retryable"] != true {
		t.Fatalf("error map = %v, want timeout retryable", m)
	}
	if f.model.Calls() != 2 {
		t.Fatalf("model calls = %d, want 2 (the model continued after the error map)", f.model.Calls())
	}
}

func TestToolErrorWithoutCallbackEndsInvocationWithEventsKept(t *testing.T) {
	boom := errors.New("ledger unavailable")
	f := newFixture(t, agenttest.Reply(agenttest.Call("ledger", nil)))
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "ledger", run: func(context.Context, map[string]any) (map[string]any, error) {
		return nil, boom
	}})
	events, err := f.run(t, "inv-1", "check the ledger")
	var te *agent.ToolError
	if !errors.As(err, &te) || te.Tool != "ledger" || !errors.Is(err, boom) {
		t.Fatalf("error = %v, want *ToolError wrapping the tool's error", err)
	}
	sess := f.session(t)
	// user message + the model's function call are durable; no response was invented.
	if len(sess.Events) != 2 || len(sess.Events[1].FunctionCalls()) != 1 {
		t.Fatalf("session = %d events, want user message and function call", len(sess.Events))
	}
	if len(events) != 1 {
		t.Fatalf("yielded %d events before the error, want 1", len(events))
	}
}

func TestToolPanicIsContained(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Call("crashy", nil)),
		agenttest.Reply(agenttest.Text("sorry")),
	)
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "crashy", run: func(context.Context, map[string]any) (map[string]any, error) {
		var m map[string]int
		//lint:ignore SA5000 the nil map write is the point: a real runtime panic
		m["x"]++
		return nil, nil
	}})
	var seen error
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{func(ctx context.Context, cc *agent.CallbackContext, call *agent.ToolCall, err error) (map[string]any, error) {
		seen = err
		return tool.Error(tool.ReasonInternal, false, "An internal error occurred."), nil
	}}
	events, err := f.run(t, "inv-1", "x")
	if err != nil {
		t.Fatal(err)
	}
	var pe *tool.PanicError
	if !errors.As(seen, &pe) || len(pe.Stack) == 0 {
		t.Fatalf("on-tool-error saw %v, want *tool.PanicError with a stack", seen)
	}
	m := agenttest.ResponseFor(t, events, "crashy")
	for k, v := range m {
		if s, ok := v.(string); ok && (strings.Contains(s, "goroutine") || strings.Contains(s, ".go:")) {
			t.Fatalf("error map leaks a stack trace in %q: %q", k, s)
		}
	}
	if testutil.ToFloat64(f.metrics.ToolErrors.WithLabelValues("support", "crashy", "panic")) != 1 {
		t.Fatal("panic not counted")
	}
}

func TestToolPanicWithoutCallbackEscalates(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Call("crashy", nil)))
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "crashy", run: func(context.Context, map[string]any) (map[string]any, error) {
		panic("kaboom")
	}})
	_, err := f.run(t, "inv-1", "x")
	var pe *tool.PanicError
	if !errors.As(err, &pe) || pe.Value != "kaboom" {
		t.Fatalf("error = %v, want a *ToolError wrapping *tool.PanicError", err)
	}
}

func TestPluginCallbackWinsOverAgentCallback(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Call("ledger", nil)),
		agenttest.Reply(agenttest.Text("ok")),
	)
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "ledger", run: func(context.Context, map[string]any) (map[string]any, error) {
		return nil, errors.New("down")
	}})
	var agentCalled atomic.Bool
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{func(context.Context, *agent.CallbackContext, *agent.ToolCall, error) (map[string]any, error) {
		agentCalled.Store(true)
		return tool.Error("from_agent", false, ""), nil
	}}
	f.agent.Plugins = []*agent.Plugin{{Name: "p", Callbacks: agent.Callbacks{OnToolError: []agent.OnToolErrorCallback{
		func(context.Context, *agent.CallbackContext, *agent.ToolCall, error) (map[string]any, error) {
			return tool.Error("from_plugin", false, ""), nil
		}}}}}
	events, err := f.run(t, "inv-1", "x")
	if err != nil {
		t.Fatal(err)
	}
	if m := agenttest.ResponseFor(t, events, "ledger"); m["reason"] != "from_plugin" {
		t.Fatalf("response reason = %v, want from_plugin", m["reason"])
	}
	if agentCalled.Load() {
		t.Fatal("agent callback ran although the plugin answered")
	}
}

func TestCallbacksReturningNothingEscalate(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Call("ledger", nil)))
	authErr := errors.New("credential revoked")
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "ledger", run: func(context.Context, map[string]any) (map[string]any, error) {
		return nil, authErr
	}})
	var calls atomic.Int32
	nothing := func(context.Context, *agent.CallbackContext, *agent.ToolCall, error) (map[string]any, error) {
		calls.Add(1)
		return nil, nil
	}
	f.agent.Plugins = []*agent.Plugin{{Name: "p", Callbacks: agent.Callbacks{OnToolError: []agent.OnToolErrorCallback{nothing}}}}
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{nothing, agent.ClassifyToolError()}
	_, err := f.run(t, "inv-1", "x")
	if !errors.Is(err, authErr) {
		t.Fatalf("error = %v, want escalation of the tool error", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("callbacks run = %d, want 2 (every callback tried before escalating)", calls.Load())
	}
}

func TestUnknownToolGetsErrorMapAndCounter(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Call("cancel_order", map[string]any{"order_id": "A-1042"})),
		agenttest.Reply(agenttest.Text("I cannot cancel orders.")),
	)
	var sawSentinel atomic.Bool
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{func(_ context.Context, _ *agent.CallbackContext, call *agent.ToolCall, err error) (map[string]any, error) {
		sawSentinel.Store(errors.Is(err, tool.ErrUnknownTool) && call.Tool == nil && call.Name == "cancel_order")
		return nil, nil
	}}
	events, err := f.run(t, "inv-1", "cancel A-1042")
	if err != nil {
		t.Fatal(err)
	}
	m := agenttest.ResponseFor(t, events, "cancel_order")
	if m["reason"] != tool.ReasonUnknownTool {
		t.Fatalf("response = %v, want unknown_tool", m)
	}
	avail, _ := m["available_tools"].([]any)
	if len(avail) != 2 || avail[0] != support.GetOrderTool || avail[1] != support.RefundOrderTool {
		t.Fatalf("available_tools = %v", m["available_tools"])
	}
	if !sawSentinel.Load() {
		t.Fatal("on-tool-error callback did not see ErrUnknownTool with a nil tool")
	}
	if got := testutil.ToFloat64(f.metrics.UnknownToolCalls.WithLabelValues("support", "cancel_order")); got != 1 {
		t.Fatalf("unknown tool counter = %v, want 1", got)
	}
}

func TestUnknownToolCallbackCanOverride(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Call("cancel_order", nil)),
		agenttest.Reply(agenttest.Text("ok")),
	)
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{func(context.Context, *agent.CallbackContext, *agent.ToolCall, error) (map[string]any, error) {
		return tool.Error("renamed", false, "Use cancel_order_v2."), nil
	}}
	events, err := f.run(t, "inv-1", "x")
	if err != nil {
		t.Fatal(err)
	}
	if m := agenttest.ResponseFor(t, events, "cancel_order"); m["reason"] != "renamed" {
		t.Fatalf("override not used: %v", m)
	}
}

func TestBadArgumentsComeBackWithoutRunningTool(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Call(support.RefundOrderTool, map[string]any{"order_id": "A-1042", "amount_cents": "all of it"})),
		agenttest.Reply(agenttest.Call(support.RefundOrderTool, map[string]any{"order_id": "A-1042"})),
		agenttest.Reply(agenttest.Text("done")),
	)
	events, err := f.run(t, "inv-1", "refund A-1042")
	if err != nil {
		t.Fatal(err)
	}
	rs := agenttest.FunctionResponses(events)
	if len(rs) != 2 {
		t.Fatalf("responses = %d, want 2", len(rs))
	}
	for i, r := range rs {
		if r.Response["reason"] != tool.ReasonBadArguments || r.Response["detail"] == "" {
			t.Fatalf("response %d = %v, want bad_arguments with detail", i, r.Response)
		}
	}
	if !strings.Contains(rs[1].Response["detail"].(string), "amount_cents") {
		t.Fatalf("detail does not name the missing field: %v", rs[1].Response["detail"])
	}
	if n := len(f.orders.Refunds()); n != 0 {
		t.Fatalf("tool ran %d times with bad arguments", n)
	}
}

func TestBudgetExceededAtExactlyNPlusOne(t *testing.T) {
	const n = 3
	steps := make([]agenttest.Step, 0, n+1)
	for range n + 1 {
		steps = append(steps, agenttest.Reply(getOrder("A-1042")))
	}
	f := newFixture(t, steps...)
	f.agent.MaxModelCalls = n
	_, err := f.run(t, "inv-1", "loop forever")
	var be *model.CallBudgetError
	if !errors.As(err, &be) || !errors.Is(err, model.ErrCallBudgetExceeded) {
		t.Fatalf("error = %v, want *model.CallBudgetError", err)
	}
	if be.Limit != n || be.Attempted != n+1 {
		t.Fatalf("budget error = %+v, want limit %d attempted %d", be, n, n+1)
	}
	if f.model.Calls() != n {
		t.Fatalf("model calls = %d, want exactly %d (call %d refused before reaching the model)", f.model.Calls(), n, n+1)
	}
}

func TestBudgetNotExceededAtExactlyN(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(getOrder("A-1042")),
		agenttest.Reply(agenttest.Text("done")),
	)
	f.agent.MaxModelCalls = 2
	out, err := f.runner.Invoke(context.Background(), agent.RunRequest{InvocationID: "i", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "x")})
	if err != nil {
		t.Fatalf("2 calls with a budget of 2 failed: %v", err)
	}
	if out.ModelCalls != 2 || out.Final == nil {
		t.Fatalf("outcome = %+v", out)
	}
}

func TestBeforeModelShortCircuitDoesNotCount(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("from the model")))
	f.agent.MaxModelCalls = 1
	cached := 0
	f.agent.Callbacks.BeforeModel = []agent.BeforeModelCallback{func(context.Context, *agent.CallbackContext, *model.Request) (*model.Response, error) {
		if cached < 2 {
			cached++
			return getOrder("A-1042"), nil // answered from a cache, twice
		}
		return nil, nil
	}}
	out, err := f.runner.Invoke(context.Background(), agent.RunRequest{InvocationID: "i", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "x")})
	if err != nil {
		t.Fatalf("short-circuited steps were charged to the budget: %v", err)
	}
	if out.ModelCalls != 1 || f.model.Calls() != 1 {
		t.Fatalf("model calls = %d (charged %d), want 1", f.model.Calls(), out.ModelCalls)
	}
	if out.Final.Content.Text() != "from the model" {
		t.Fatalf("final = %q", out.Final.Content.Text())
	}
}

func TestOnModelErrorSubstitutePassesThroughAfterModel(t *testing.T) {
	f := newFixture(t, agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 503, Status: "UNAVAILABLE"}))
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{func(context.Context, *agent.CallbackContext, *model.Request, error) (*model.Response, error) {
		return agenttest.Text("degraded"), nil
	}}
	f.agent.Callbacks.AfterModel = []agent.AfterModelCallback{func(_ context.Context, cc *agent.CallbackContext, r *model.Response) (*model.Response, error) {
		cc.SetState("after_model_saw", r.Content.Text())
		return agenttest.Text(r.Content.Text() + " (checked)"), nil
	}}
	events, err := f.run(t, "inv-1", "x")
	if err != nil {
		t.Fatal(err)
	}
	if got := agenttest.FinalText(events); got != "degraded (checked)" {
		t.Fatalf("final = %q, want the substitute after after-model", got)
	}
	if f.session(t).State["after_model_saw"] != "degraded" {
		t.Fatalf("state = %v", f.session(t).State)
	}
}

func TestModelErrorWithoutSubstituteEscalates(t *testing.T) {
	perr := &model.ProviderError{Provider: "test", StatusCode: 401, Status: "UNAUTHENTICATED"}
	f := newFixture(t, agenttest.Fail(perr))
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{func(context.Context, *agent.CallbackContext, *model.Request, error) (*model.Response, error) {
		return nil, nil
	}}
	_, err := f.run(t, "inv-1", "x")
	var me *agent.ModelError
	var pe *model.ProviderError
	if !errors.As(err, &me) || !errors.As(err, &pe) || pe.StatusCode != 401 {
		t.Fatalf("error = %v, want *ModelError wrapping the provider error", err)
	}
}

func TestErrorCodeOnlyResponseEndsLoop(t *testing.T) {
	f := newFixture(t, agenttest.Reply(&model.Response{ErrorCode: model.FinishReasonProhibitedContent, ErrorMessage: "blocked"}))
	out, err := f.runner.Invoke(context.Background(), agent.RunRequest{InvocationID: "i", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "x")})
	if err != nil {
		t.Fatal(err)
	}
	if f.model.Calls() != 1 {
		t.Fatalf("model calls = %d, want 1: an error-code response must end the loop", f.model.Calls())
	}
	if out.Final == nil || out.Final.ErrorCode != model.FinishReasonProhibitedContent || out.Final.ErrorMessage != "blocked" {
		t.Fatalf("final = %+v, want the error-code event", out.Final)
	}
}

func TestEmptyModelSequenceIsFinalNotSpin(t *testing.T) {
	f := newFixture(t, agenttest.Reply())
	out, err := f.runner.Invoke(context.Background(), agent.RunRequest{InvocationID: "i", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "x")})
	if err != nil {
		t.Fatal(err)
	}
	if f.model.Calls() != 1 || out.Final == nil || out.Final.Content != nil || out.Final.FinishReason != "" {
		t.Fatalf("calls=%d final=%+v, want one call and an empty final event", f.model.Calls(), out.Final)
	}
}

func TestStreamFailureAfterPartialMarksCutOff(t *testing.T) {
	reset := errors.New("connection reset by peer")
	f := newFixture(t, agenttest.Step{Responses: []*model.Response{agenttest.Partial("Your refund "), agenttest.Partial("is on")}, Err: reset})
	events, err := agenttest.Collect(f.runner.Run(context.Background(), agent.RunRequest{
		InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: true,
		Message: model.NewTextContent(model.RoleUser, "x"),
	}))
	var me *agent.ModelError
	if !errors.As(err, &me) || !me.AfterOutput || !errors.Is(err, reset) {
		t.Fatalf("error = %v, want *ModelError after output", err)
	}
	if len(events) != 3 || !events[0].Partial || !events[1].Partial {
		t.Fatalf("events = %d, want 2 partials then a cut-off marker", len(events))
	}
	cut := events[2]
	if !cut.CutOff || cut.Content.Text() != "Your refund is on" || cut.Partial {
		t.Fatalf("marker = %+v", cut)
	}
	sess := f.session(t)
	if len(sess.Events) != 2 || !sess.Events[1].CutOff {
		t.Fatalf("session should hold user message and the cut-off marker, not partials: %d events", len(sess.Events))
	}
}

func TestStreamingStoresOnlyAggregate(t *testing.T) {
	full := agenttest.Text("Hello there")
	f := newFixture(t, agenttest.Reply(agenttest.Partial("Hello "), agenttest.Partial("there"), full))
	events, err := agenttest.Collect(f.runner.Run(context.Background(), agent.RunRequest{
		InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: true,
		Message: model.NewTextContent(model.RoleUser, "x"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || !events[0].Partial || events[2].Partial {
		t.Fatalf("events = %+v", events)
	}
	if sess := f.session(t); len(sess.Events) != 2 || sess.Events[1].Content.Text() != "Hello there" {
		t.Fatalf("session holds %d events, want user + aggregate", len(sess.Events))
	}
}

func TestParallelToolCallsKeepOrderAndSurviveOneFailure(t *testing.T) {
	release := make(chan struct{})
	var running atomic.Int32
	var maxRunning atomic.Int32
	slowOK := func(name string) tool.Tool {
		return failingTool{name: name, run: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
			n := running.Add(1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
			<-release
			running.Add(-1)
			return tool.OK(map[string]any{"tool": name}), nil
		}}
	}
	f := newFixture(t, agenttest.Reply(agenttest.Calls(
		&model.FunctionCall{ID: "c1", Name: "t1"},
		&model.FunctionCall{ID: "c2", Name: "broken"},
		&model.FunctionCall{ID: "c3", Name: "t3"},
	)))
	f.agent.Tools = []tool.Tool{slowOK("t1"), slowOK("t3"), failingTool{name: "broken", run: func(context.Context, map[string]any) (map[string]any, error) {
		return nil, errors.New("broken tool")
	}}}
	go func() {
		// Let both slow tools start before releasing them: proves they run concurrently.
		for running.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		close(release)
	}()
	events, err := f.run(t, "inv-1", "x")
	var te *agent.ToolError
	if !errors.As(err, &te) || te.Tool != "broken" {
		t.Fatalf("error = %v, want the broken branch's *ToolError", err)
	}
	if maxRunning.Load() < 2 {
		t.Fatalf("tools did not run concurrently (max %d at once)", maxRunning.Load())
	}
	rs := agenttest.FunctionResponses(events)
	if len(rs) != 2 || rs[0].ID != "c1" || rs[1].ID != "c3" {
		t.Fatalf("responses = %+v, want c1 then c3 kept despite c2 failing", rs)
	}
	// The surviving results are durable in the session.
	if got := agenttest.FunctionResponses(f.session(t).Events); len(got) != 2 {
		t.Fatalf("session holds %d responses, want 2", len(got))
	}
}

func TestParallelismIsBounded(t *testing.T) {
	var running, maxRunning atomic.Int32
	tl := failingTool{name: "t", run: func(context.Context, map[string]any) (map[string]any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		return tool.OK(nil), nil
	}}
	var calls []*model.FunctionCall
	for i := range 10 {
		calls = append(calls, &model.FunctionCall{ID: fmt.Sprintf("c%d", i), Name: "t"})
	}
	f := newFixture(t, agenttest.Reply(agenttest.Calls(calls...)), agenttest.Reply(agenttest.Text("ok")))
	f.agent.Tools = []tool.Tool{tl}
	f.agent.MaxParallelTools = 3
	events, err := f.run(t, "inv-1", "x")
	if err != nil {
		t.Fatal(err)
	}
	if maxRunning.Load() > 3 {
		t.Fatalf("%d tools ran at once, bound is 3", maxRunning.Load())
	}
	rs := agenttest.FunctionResponses(events)
	for i, r := range rs {
		if r.ID != fmt.Sprintf("c%d", i) {
			t.Fatalf("response %d has id %s: order not kept", i, r.ID)
		}
	}
}

func TestResumeAfterFailureDoesNotDuplicate(t *testing.T) {
	outage := &model.ProviderError{Provider: "test", StatusCode: 503, Status: "UNAVAILABLE"}
	f := newFixture(t,
		agenttest.Reply(getOrder("A-1042")),
		agenttest.Reply(refund("A-1042", 1299, "damaged")),
		agenttest.Fail(outage), // fails after the refund ran
	)
	_, err := f.run(t, "inv-1", "Please refund order A-1042")
	if !errors.Is(err, outage) {
		t.Fatalf("first run error = %v", err)
	}
	if len(f.orders.Refunds()) != 1 {
		t.Fatal("refund did not run in the first attempt")
	}
	before := len(f.session(t).Events)

	f.model.Push(agenttest.Reply(agenttest.Text("Refunded.")))
	events, err := f.run(t, "inv-1", "Please refund order A-1042")
	if err != nil {
		t.Fatalf("resume failed: %v", err)
	}
	if len(f.orders.Refunds()) != 1 {
		t.Fatalf("resume re-ran the refund: %d refunds", len(f.orders.Refunds()))
	}
	sess := f.session(t)
	users := 0
	for _, e := range sess.Events {
		if e.Author == session.AuthorUser {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("user message stored %d times, want 1", users)
	}
	if len(sess.Events) != before+1 || len(events) != 1 || agenttest.FinalText(events) != "Refunded." {
		t.Fatalf("resume added %d events (yielded %d), want only the final answer", len(sess.Events)-before, len(events))
	}
	// The resumed model call saw the whole history including the refund result.
	reqs := f.model.Requests()
	last := reqs[len(reqs)-1].Contents
	if rs := last[len(last)-1].FunctionResponses(); len(rs) != 1 || rs[0].Name != support.RefundOrderTool {
		t.Fatalf("resumed call did not continue from the refund result: %+v", last[len(last)-1])
	}
}

func TestResumeRunsPendingCallsOnly(t *testing.T) {
	var ledgerRuns atomic.Int32
	failOnce := true
	f := newFixture(t, agenttest.Reply(agenttest.Calls(
		&model.FunctionCall{ID: "c1", Name: support.RefundOrderTool, Args: map[string]any{"order_id": "A-1042", "amount_cents": float64(100)}},
		&model.FunctionCall{ID: "c2", Name: "ledger"},
	)))
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "ledger", run: func(context.Context, map[string]any) (map[string]any, error) {
		ledgerRuns.Add(1)
		if failOnce {
			failOnce = false
			return nil, errors.New("ledger down")
		}
		return tool.OK(nil), nil
	}})
	if _, err := f.run(t, "inv-1", "x"); err == nil {
		t.Fatal("first run should fail on the ledger")
	}
	f.model.Push(agenttest.Reply(agenttest.Text("all done")))
	events, err := f.run(t, "inv-1", "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.orders.Refunds()) != 1 || ledgerRuns.Load() != 2 {
		t.Fatalf("refunds=%d ledger runs=%d, want 1 and 2", len(f.orders.Refunds()), ledgerRuns.Load())
	}
	if rs := agenttest.FunctionResponses(events); len(rs) != 1 || rs[0].ID != "c2" {
		t.Fatalf("resume answered %+v, want only the pending c2", rs)
	}
	// The model sees c1 and c2 answered in one turn after the calls.
	last := f.model.Requests()[1].Contents
	if rs := last[len(last)-1].FunctionResponses(); len(rs) != 2 {
		t.Fatalf("responses not merged into one turn: %+v", last[len(last)-1])
	}
}

func TestResumeOfCompletedInvocationRunsNothing(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("hello")))
	if _, err := f.run(t, "inv-1", "hi"); err != nil {
		t.Fatal(err)
	}
	events, err := f.run(t, "inv-1", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if f.model.Calls() != 1 || len(events) != 1 || events[0].Content.Text() != "hello" {
		t.Fatalf("completed invocation ran again: calls=%d events=%d", f.model.Calls(), len(events))
	}
}

func TestResumedBudgetCountsEarlierCalls(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(getOrder("A-1042")),
		agenttest.Fail(errors.New("boom")),
	)
	f.agent.MaxModelCalls = 2
	if _, err := f.run(t, "inv-1", "x"); err == nil {
		t.Fatal("want failure")
	}
	f.model.Push(agenttest.Reply(getOrder("A-1042")), agenttest.Reply(agenttest.Text("x")))
	_, err := f.run(t, "inv-1", "x")
	if !errors.Is(err, model.ErrCallBudgetExceeded) {
		t.Fatalf("error = %v: the resumed invocation should have 1 call left", err)
	}
}

func TestFallbackTextReflectsCompletedRefund(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(refund("A-1042", 1299, "damaged")),
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 503}),
	)
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{func(_ context.Context, cc *agent.CallbackContext, _ *model.Request, _ error) (*model.Response, error) {
		msg := "I could not reach the assistant service just now. Your request was not completed."
		for _, ct := range cc.CompletedTools() {
			if ct.Name == support.RefundOrderTool && ct.Succeeded() {
				msg = fmt.Sprintf("Your refund for order %v was completed, but I could not finish the rest just now.", ct.Args["order_id"])
			}
		}
		return agenttest.Text(msg), nil
	}}
	events, err := f.run(t, "inv-1", "refund A-1042")
	if err != nil {
		t.Fatal(err)
	}
	got := agenttest.FinalText(events)
	if !strings.Contains(got, "refund for order A-1042 was completed") || strings.Contains(got, "not completed") {
		t.Fatalf("fallback = %q: it must not claim nothing happened after the refund", got)
	}
}

func TestStopSignalStopsAtStepBoundary(t *testing.T) {
	stop := make(chan struct{})
	f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Reply(agenttest.Text("done")))
	f.agent.Callbacks.AfterTool = []agent.AfterToolCallback{func(context.Context, *agent.CallbackContext, *agent.ToolCall, map[string]any) (map[string]any, error) {
		close(stop) // shutdown arrives while the tool step runs
		return nil, nil
	}}
	_, err := agenttest.Collect(f.runner.Run(context.Background(), agent.RunRequest{InvocationID: "inv-1", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "x"), Stop: stop}))
	if !errors.Is(err, agent.ErrStopped) {
		t.Fatalf("error = %v, want ErrStopped", err)
	}
	if f.model.Calls() != 1 {
		t.Fatalf("model calls = %d, want 1: the step in flight finished, the next did not start", f.model.Calls())
	}
	if got := agenttest.FunctionResponses(f.session(t).Events); len(got) != 1 {
		t.Fatal("the tool result of the finished step was not stored")
	}
	events, err := f.run(t, "inv-1", "x")
	if err != nil || agenttest.FinalText(events) != "done" {
		t.Fatalf("resume after stop: %v %q", err, agenttest.FinalText(events))
	}
}

func TestModelPanicIsContained(t *testing.T) {
	f := newFixture(t, agenttest.Step{Panic: "provider bug"})
	_, err := f.run(t, "inv-1", "x")
	var me *agent.ModelError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("error = %v, want a *ModelError for the panic", err)
	}
}

func TestCallbackPanicIsContained(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("x")))
	f.agent.Callbacks.AfterModel = []agent.AfterModelCallback{func(context.Context, *agent.CallbackContext, *model.Response) (*model.Response, error) {
		panic("callback bug")
	}}
	_, err := f.run(t, "inv-1", "x")
	var ce *agent.CallbackError
	if !errors.As(err, &ce) || ce.Hook != "after-model" {
		t.Fatalf("error = %v, want *CallbackError", err)
	}
}

func TestEndInvocationFromTool(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Call("handoff", nil)), agenttest.Reply(agenttest.Text("never")))
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "handoff", run: func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		tool.FromContext(ctx).EndInvocation()
		tool.FromContext(ctx).SetState("handed_off", true)
		return tool.OK(nil), nil
	}})
	if _, err := f.run(t, "inv-1", "x"); err != nil {
		t.Fatal(err)
	}
	if f.model.Calls() != 1 {
		t.Fatalf("model called %d times after an end-invocation action", f.model.Calls())
	}
	if f.session(t).State["handed_off"] != true {
		t.Fatal("tool state delta not applied")
	}
}

func TestNewInvocationNeedsMessage(t *testing.T) {
	f := newFixture(t)
	_, err := agenttest.Collect(f.runner.Run(context.Background(), agent.RunRequest{InvocationID: "i", UserID: "u1", SessionID: "s1"}))
	if !errors.Is(err, agent.ErrNoMessage) {
		t.Fatalf("error = %v", err)
	}
}

func TestErrorMapsAreSanitised(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Call("db", nil)), agenttest.Reply(agenttest.Text("x")))
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "db", run: func(context.Context, map[string]any) (map[string]any, error) {
		return tool.Error("db_failed", true, "pq: SELECT * FROM orders WHERE id = 1 failed\n\tat db.go:42"), nil
	}})
	events, err := f.run(t, "inv-1", "x")
	if err != nil {
		t.Fatal(err)
	}
	if m := agenttest.ResponseFor(t, events, "db"); strings.Contains(m["hint"].(string), "SELECT") {
		t.Fatalf("SQL leaked to the model: %v", m)
	}
}

type infraErr struct{ error }

func (infraErr) Infrastructure() bool { return true }

func TestClassifyToolErrorNeverConvertsInfrastructureErrors(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Call("effect", nil)))
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "effect", run: func(context.Context, map[string]any) (map[string]any, error) {
		// A store timing out: wraps DeadlineExceeded, but must fail closed.
		return nil, infraErr{fmt.Errorf("idempotency store: %w", context.DeadlineExceeded)}
	}})
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{agent.ClassifyToolError()}
	_, err := f.run(t, "inv-1", "x")
	if !tool.IsInfrastructure(err) {
		t.Fatalf("error = %v, want the infrastructure error to escalate", err)
	}
}

// A degraded answer substituted by an on-model-error callback ends that run,
// but a replay of the invocation calls the model again (without showing it
// the degraded text) instead of returning the degraded answer as final.
func TestResumeAfterSubstitutedAnswerCallsTheModelAgain(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(refund("A-1042", 1299, "damaged")),
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 503}),
	)
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{func(context.Context, *agent.CallbackContext, *model.Request, error) (*model.Response, error) {
		return agenttest.Text("degraded: try later"), nil
	}}
	if _, err := f.run(t, "inv-1", "refund A-1042"); err != nil {
		t.Fatal(err)
	}
	f.model.Push(agenttest.Reply(agenttest.Text("Refunded 12.99.")))
	events, err := f.run(t, "inv-1", "refund A-1042")
	if err != nil {
		t.Fatal(err)
	}
	if got := agenttest.FinalText(events); got != "Refunded 12.99." {
		t.Fatalf("final after replay = %q, want a fresh model answer", got)
	}
	if len(f.orders.Refunds()) != 1 {
		t.Fatalf("refunds = %d", len(f.orders.Refunds()))
	}
	last := f.model.Requests()[2].Contents
	for _, c := range last {
		if strings.Contains(c.Text(), "degraded") {
			t.Fatal("the degraded text was sent back to the model")
		}
	}
}

// A resume charges the earlier model calls to the budget, except the
// uncharged ones: all of them with FreshBudget (reported back as
// Outcome.UnchargedModelCalls), or as many as RunRequest.UnchargedModelCalls
// says, which a later resume passes on so the reset holds.
func TestUnchargedModelCallsOnResume(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(getOrder("A-1042")), agenttest.Reply(getOrder("A-1042")), // run 1: budget spent
		agenttest.Reply(getOrder("A-1042")), // run 2, fresh: then the model fails
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 503}),
		agenttest.Reply(agenttest.Text("done")), // run 4: within what the reset left
	)
	f.agent.MaxModelCalls = 2
	req := agent.RunRequest{InvocationID: "i", UserID: "u1", SessionID: "s1", Message: model.NewTextContent(model.RoleUser, "x")}
	ctx := context.Background()
	if _, err := f.runner.Invoke(ctx, req); !errors.Is(err, model.ErrCallBudgetExceeded) {
		t.Fatalf("run 1: %v, want the budget exceeded", err)
	}
	fresh := req
	fresh.FreshBudget = true
	out, err := f.runner.Invoke(ctx, fresh)
	if err == nil || errors.Is(err, model.ErrCallBudgetExceeded) {
		t.Fatalf("run 2 (fresh): %v, want the model's failure", err)
	}
	if out.UnchargedModelCalls != 2 {
		t.Fatalf("run 2 (fresh): %d uncharged, want the 2 calls of run 1", out.UnchargedModelCalls)
	}
	// Run 3 without the reset passed on: charged 3 calls, over budget at once.
	if out, err := f.runner.Invoke(ctx, req); !errors.Is(err, model.ErrCallBudgetExceeded) || out.UnchargedModelCalls != 0 {
		t.Fatalf("run 3: %v, %d uncharged; want the budget exceeded, 0", err, out.UnchargedModelCalls)
	}
	calls := f.model.Calls()
	// Run 4 passes it on: charged 1 call, one more fits.
	kept := req
	kept.UnchargedModelCalls = 2
	out, err = f.runner.Invoke(ctx, kept)
	if err != nil || out.Final == nil || out.UnchargedModelCalls != 2 || out.ModelCalls != 2 {
		t.Fatalf("run 4: %v, %+v; want done with 2 uncharged and 2 charged", err, out)
	}
	if f.model.Calls() != calls+1 {
		t.Fatalf("run 4 called the model %d times, want 1", f.model.Calls()-calls)
	}
}

// More uncharged calls than there were count as all of them, and a
// negative number as none.
func TestUnchargedModelCallsAreClamped(t *testing.T) {
	for _, tc := range []struct{ uncharged, want int }{{99, 2}, {-1, 0}} {
		f := newFixture(t, agenttest.Reply(getOrder("A-1042")), agenttest.Reply(getOrder("A-1042")),
			agenttest.Reply(agenttest.Text("done")))
		f.agent.MaxModelCalls = 2
		req := agent.RunRequest{InvocationID: "i", UserID: "u1", SessionID: "s1", Message: model.NewTextContent(model.RoleUser, "x")}
		if _, err := f.runner.Invoke(context.Background(), req); !errors.Is(err, model.ErrCallBudgetExceeded) {
			t.Fatalf("run 1: %v", err)
		}
		req.UnchargedModelCalls = tc.uncharged
		out, err := f.runner.Invoke(context.Background(), req)
		if out.UnchargedModelCalls != tc.want {
			t.Errorf("uncharged %d: outcome says %d, want %d (err %v)", tc.uncharged, out.UnchargedModelCalls, tc.want, err)
		}
		if tc.want == 2 && (err != nil || out.Final == nil) {
			t.Errorf("uncharged %d: %v, want done", tc.uncharged, err)
		}
		if tc.want == 0 && !errors.Is(err, model.ErrCallBudgetExceeded) {
			t.Errorf("uncharged %d: %v, want the budget exceeded", tc.uncharged, err)
		}
	}
}
