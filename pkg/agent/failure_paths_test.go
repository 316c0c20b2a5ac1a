package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// An on-model-error callback may answer with a fallback model's response
// (the seed: "a response from a smaller fallback model"), and such a response
// may ask for tools. The next model request carries the substituted calls
// before their responses: without them it would carry function responses
// that answer no call, which every provider rejects (an OpenAI "tool"
// message must follow the assistant message with its tool_calls; Gemini
// pairs function responses with the previous turn).
func TestSubstitutedFunctionCallsReachTheModel(t *testing.T) {
	f := newFixture(t,
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 503, Status: "UNAVAILABLE"}),
		agenttest.Reply(agenttest.Text("Order A-1042 is on its way.")),
	)
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{func(context.Context, *agent.CallbackContext, *model.Request, error) (*model.Response, error) {
		return getOrder("A-1042"), nil // the fallback model asks for a tool
	}}
	if _, err := f.run(t, "inv-1", "where is A-1042"); err != nil {
		t.Fatal(err)
	}
	reqs := f.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	contents := reqs[1].Contents
	last := contents[len(contents)-1]
	if len(last.FunctionResponses()) != 1 {
		t.Fatalf("second request does not end with the tool's response: %+v", last)
	}
	var prev []*model.FunctionCall
	if len(contents) >= 2 {
		prev = contents[len(contents)-2].FunctionCalls()
	}
	if len(prev) != 1 || prev[0].ID != last.FunctionResponses()[0].ID {
		t.Fatalf("function response %q is not preceded by its function call: contents roles/parts = %s",
			last.FunctionResponses()[0].ID, describe(contents))
	}
}

func describe(cs []*model.Content) string {
	s := ""
	for _, c := range cs {
		s += fmt.Sprintf("[%s calls=%d responses=%d text=%q] ", c.Role, len(c.FunctionCalls()), len(c.FunctionResponses()), c.Text())
	}
	return s
}

// Agent.MaxModelCalls: "only real model calls count: a before-model callback
// that short-circuits does not", also when a resumed invocation counts its
// earlier runs' calls (the short-circuited event is marked so).
func TestResumeDoesNotChargeShortCircuits(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Text("from the model")))
	f.agent.MaxModelCalls = 1
	short := true
	f.agent.Callbacks.BeforeModel = []agent.BeforeModelCallback{func(context.Context, *agent.CallbackContext, *model.Request) (*model.Response, error) {
		if short {
			return agenttest.Call("flaky", nil), nil // answered from a cache
		}
		return nil, nil
	}}
	fail := true
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "flaky", run: func(context.Context, map[string]any) (map[string]any, error) {
		if fail {
			return nil, errors.New("backend down") // escalates: the invocation ends
		}
		return tool.OK(nil), nil
	}})
	if _, err := f.run(t, "inv-1", "x"); err == nil {
		t.Fatal("first run: want the tool's escalation")
	}
	if f.model.Calls() != 0 {
		t.Fatalf("first run made %d model calls, want 0", f.model.Calls())
	}
	short, fail = false, false
	out, err := f.runner.Invoke(context.Background(), agentReq("inv-1"))
	if err != nil {
		t.Fatalf("resume: %v (no real model call was ever made, budget is 1)", err)
	}
	if out.ModelCalls != 1 {
		t.Fatalf("charged %d model calls, want 1", out.ModelCalls)
	}
}

func agentReq(id string) agent.RunRequest {
	return agent.RunRequest{InvocationID: id, UserID: "u1", SessionID: "s1", Message: model.NewTextContent(model.RoleUser, "x")}
}

// deadlineCtx is a context whose deadline the test fires by hand.
type deadlineCtx struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
}
func (c *deadlineCtx) fire()                 { c.once.Do(func() { close(c.done) }) }
func (c *deadlineCtx) Done() <-chan struct{} { return c.done }
func (c *deadlineCtx) Deadline() (deadline time.Time, ok bool) {
	return time.Now().Add(time.Hour), true
}
func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// When the invocation's own context ends while a tool runs, the tool's
// error is not handed to the on-tool-error callbacks (as modelStep skips
// them when ctx is done): with ClassifyToolError the invocation's deadline
// became the model input {"reason":"timeout","retryable":true}, stored as
// the call's answer, so a resume never ran the interrupted tool again. The
// invocation ends with a *ToolError wrapping the deadline, and a resume runs
// the call.
func TestInvocationDeadlineIsNotAToolErrorMap(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(agenttest.Call("lookup", nil)),
		agenttest.Reply(agenttest.Text("done")),
	)
	ctx := newDeadlineCtx()
	runs := 0
	f.agent.Tools = append(f.agent.Tools, failingTool{name: "lookup", run: func(tctx context.Context, _ map[string]any) (map[string]any, error) {
		runs++
		if runs == 1 {
			ctx.fire() // the invocation's deadline passes while the tool waits
			<-tctx.Done()
			return nil, tctx.Err()
		}
		return tool.OK(map[string]any{"found": true}), nil
	}})
	f.agent.Callbacks.OnToolError = []agent.OnToolErrorCallback{agent.ClassifyToolError()}
	_, err := agenttest.Collect(f.runner.Run(ctx, agentReq("inv-1")))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first run error = %v, want the context's deadline", err)
	}
	var te *agent.ToolError
	if !errors.As(err, &te) || te.Tool != "lookup" {
		t.Fatalf("first run error = %v, want a *ToolError of lookup", err)
	}
	for _, ct := range agent.CompletedToolsOf(f.session(t).Events) {
		if ct.Name == "lookup" {
			t.Fatalf("the interrupted call was answered with %v and stored as the model's input", ct.Response)
		}
	}
	out, err := f.runner.Invoke(context.Background(), agentReq("inv-1"))
	if err != nil || out.Final == nil || out.Final.Content.Text() != "done" || runs != 2 {
		t.Fatalf("resume: err=%v final=%v runs=%d, want the call run again and the answer", err, out.Final, runs)
	}
}

// A panic in the caller's own range-loop body (here, on a streamed partial)
// reaches the caller as it is: callModel recovered it as the model's own
// panic before (a *ModelError, then Go's "range function continued
// iteration after loop body panic").
func TestCallerPanicIsNotAModelPanic(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Partial("Hel"), agenttest.Partial("lo"), agenttest.Text("Hello")))
	var got any
	var runErr error
	func() {
		defer func() { got = recover() }()
		for _, err := range f.runner.Run(context.Background(), agent.RunRequest{
			InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: true,
			Message: model.NewTextContent(model.RoleUser, "x"),
		}) {
			if err != nil {
				runErr = err
				continue
			}
			panic("caller bug")
		}
	}()
	if got != "caller bug" {
		t.Fatalf("caller's panic value = %v (run error %v), want the caller's own panic to reach it", got, runErr)
	}
}

// A streaming caller that cancels after seeing partial output: the cut-off
// marker is stored past the cancellation (as the end's flush stores held
// events), with the held user message, and the error is the model's. Before,
// the write used the cancelled context and failed, taking the user message
// with it, and the error was a *SessionError (infrastructure).
func TestCancelAfterPartialKeepsMessageAndCutOff(t *testing.T) {
	f := newFixture(t, agenttest.Step{Responses: []*model.Response{agenttest.Partial("Your refund ")}, Err: context.Canceled})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runErr error
	for ev, err := range f.runner.Run(ctx, agent.RunRequest{
		InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: true,
		Message: model.NewTextContent(model.RoleUser, "refund A-1042"),
	}) {
		if err != nil {
			runErr = err
			continue
		}
		if ev.Partial {
			cancel() // the user closed the page mid-answer
		}
	}
	var se *agent.SessionError
	if errors.As(runErr, &se) {
		t.Errorf("error = %v: a cancelled model call is reported as a session (infrastructure) failure", runErr)
	}
	sess := f.session(t)
	if len(sess.Events) != 2 || sess.Events[0].Content.Text() != "refund A-1042" || !sess.Events[1].CutOff {
		t.Fatalf("session holds %d events, want the user message and the cut-off marker", len(sess.Events))
	}
}

// The unknown-tool counters label by the model's requested name, which the
// model chooses (hallucinated, or injected through user or tool text): the
// first MaxUnknownToolNames names get series, the rest count as
// UnknownToolOther, so the series are bounded.
func TestUnknownToolNamesDoNotGrowMetricSeries(t *testing.T) {
	var calls []*model.FunctionCall
	for i := range 50 {
		calls = append(calls, &model.FunctionCall{Name: fmt.Sprintf("ignore_previous_instructions_%d", i)})
	}
	f := newFixture(t, agenttest.Reply(agenttest.Calls(calls...)), agenttest.Reply(agenttest.Text("ok")))
	if _, err := f.run(t, "inv-1", "x"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(f.metrics.UnknownToolCalls); n != agent.MaxUnknownToolNames+1 {
		t.Fatalf("%s has %d series after 50 names, want %d (the first %d names and %q)", agent.MetricUnknownToolCalls, n,
			agent.MaxUnknownToolNames+1, agent.MaxUnknownToolNames, agent.UnknownToolOther)
	}
	if got := testutil.ToFloat64(f.metrics.UnknownToolCalls.WithLabelValues(f.agent.Name, agent.UnknownToolOther)); got != 50-agent.MaxUnknownToolNames {
		t.Fatalf("%q counted %v calls, want %d", agent.UnknownToolOther, got, 50-agent.MaxUnknownToolNames)
	}
	if n := testutil.CollectAndCount(f.metrics.ToolCalls); n > agent.MaxUnknownToolNames+1 {
		t.Fatalf("%s has %d series", agent.MetricToolCalls, n)
	}
	// The calls run in parallel, so which names came first varies: count
	// the names with a series of their own (read last: reading creates
	// the series it asks for).
	named := 0
	for _, fc := range calls {
		if testutil.ToFloat64(f.metrics.UnknownToolCalls.WithLabelValues(f.agent.Name, fc.Name)) == 1 {
			named++
		}
	}
	if named != agent.MaxUnknownToolNames {
		t.Fatalf("%d names counted one call each, want the first %d", named, agent.MaxUnknownToolNames)
	}
}

// brokenSchemaTool declares a pattern Go's regexp refuses (a look-ahead),
// so its parameter schema does not resolve.
type brokenSchemaTool struct{ ran *bool }

var brokenSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
	"order_id": {Type: "string", Pattern: `^(?!TEST-)[A-Z]-\d+$`},
}}

func (brokenSchemaTool) Name() string        { return "lookup" }
func (brokenSchemaTool) Description() string { return "test tool" }
func (brokenSchemaTool) Declaration() *model.ToolDeclaration {
	return &model.ToolDeclaration{Name: "lookup", Description: "test tool", Parameters: brokenSchema}
}
func (b brokenSchemaTool) Run(context.Context, map[string]any) (map[string]any, error) {
	*b.ran = true
	return tool.OK(nil), nil
}

// A tool whose schema does not resolve never runs unchecked: the call ends
// the invocation with a *ToolError holding the *tool.SchemaError (not a
// bad_arguments map the model cannot act on), and Runner.CheckTools, which
// a worker runs at start, reports it.
func TestBrokenSchemaEndsTheInvocation(t *testing.T) {
	f := newFixture(t, agenttest.Reply(agenttest.Call("lookup", map[string]any{"order_id": "TEST-1"})), agenttest.Reply(agenttest.Text("no")))
	ran := false
	f.agent.Tools = append(f.agent.Tools, brokenSchemaTool{ran: &ran})
	var se *tool.SchemaError
	if err := f.runner.CheckTools(); !errors.As(err, &se) || se.Tool != "lookup" {
		t.Fatalf("CheckTools = %v, want a *tool.SchemaError for lookup", err)
	}
	_, err := f.run(t, "inv-1", "x")
	var te *agent.ToolError
	if !errors.As(err, &te) || !errors.As(err, &se) {
		t.Fatalf("run error = %v, want a *ToolError holding a *tool.SchemaError", err)
	}
	if ran || f.model.Calls() != 1 {
		t.Fatalf("tool ran=%v, model calls=%d: the tool must not run unchecked, nor the model be asked again", ran, f.model.Calls())
	}
	f.agent.Tools = f.agent.Tools[:len(f.agent.Tools)-1]
	if err := f.runner.CheckTools(); err != nil {
		t.Fatalf("CheckTools of the fixture's own tools = %v", err)
	}
}

// malformed is a response that broke the function-calling protocol and
// carries nothing else (Gemini's MALFORMED_FUNCTION_CALL).
func malformed() *model.Response {
	return &model.Response{FinishReason: model.FinishReasonMalformedFunctionCall, TurnComplete: true}
}

// TOOL_PROTOCOL (DESIGN): "the model may correct itself within the budget".
// A malformed call with nothing else is not a final answer (it ended the
// invocation as an empty "completed" answer before): the model is asked
// again, each time charged to the call budget, which bounds a model that
// never recovers (CALL_BUDGET).
func TestToolProtocolBreakAsksTheModelAgain(t *testing.T) {
	f := newFixture(t, agenttest.Reply(malformed()), agenttest.Reply(agenttest.Text("Order A-1042 is on its way.")))
	out, err := f.runner.Invoke(context.Background(), agentReq("inv-1"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Final == nil || out.Final.Content.Text() != "Order A-1042 is on its way." || out.ModelCalls != 2 {
		t.Fatalf("final=%v model calls=%d, want the second answer after 2 calls", out.Final, out.ModelCalls)
	}
	// The second request ends with a note naming the break, so it is not
	// the request that failed.
	reqs := f.model.Requests()
	last := reqs[1].Contents[len(reqs[1].Contents)-1]
	if len(reqs[1].Contents) != len(reqs[0].Contents)+1 || last.Role != model.RoleUser || !strings.Contains(last.Text(), "MALFORMED_FUNCTION_CALL") {
		t.Fatalf("second request = %s, want the first one and a note naming MALFORMED_FUNCTION_CALL", describe(reqs[1].Contents))
	}

	g := newFixture(t, agenttest.Reply(malformed()), agenttest.Reply(malformed()), agenttest.Reply(malformed()))
	g.agent.MaxModelCalls = 3
	_, err = g.runner.Invoke(context.Background(), agentReq("inv-2"))
	if !errors.Is(err, model.ErrCallBudgetExceeded) || g.model.Calls() != 3 {
		t.Fatalf("error = %v after %d calls, want the call budget after 3", err, g.model.Calls())
	}

	// A resumed invocation whose last event is the break asks again too.
	h := newFixture(t, agenttest.Reply(malformed()))
	h.agent.MaxModelCalls = 1
	if _, err := h.runner.Invoke(context.Background(), agentReq("inv-3")); !errors.Is(err, model.ErrCallBudgetExceeded) {
		t.Fatalf("first run: %v, want the call budget", err)
	}
	h.model.Push(agenttest.Reply(agenttest.Text("done")))
	out, err = h.runner.Invoke(context.Background(), agent.RunRequest{InvocationID: "inv-3", UserID: "u1", SessionID: "s1", FreshBudget: true,
		Message: model.NewTextContent(model.RoleUser, "x")})
	if err != nil || out.Final == nil || out.Final.Content.Text() != "done" {
		t.Fatalf("resume: %v, final %v; want the model asked again", err, out.Final)
	}
}

// A break that came with text (shown to a streaming caller) is left final:
// asking again would answer twice.
func TestToolProtocolBreakWithTextIsFinal(t *testing.T) {
	resp := malformed()
	resp.Content = model.NewTextContent(model.RoleModel, "Let me look that up")
	f := newFixture(t, agenttest.Reply(resp), agenttest.Reply(agenttest.Text("never")))
	out, err := f.runner.Invoke(context.Background(), agentReq("inv-1"))
	if err != nil || out.Final == nil || f.model.Calls() != 1 {
		t.Fatalf("err=%v final=%v calls=%d, want the text final after one call", err, out.Final, f.model.Calls())
	}
}
