package taxonomy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
	"github.com/agentfleet/agentfleet/pkg/taxonomy/taxonomytest"
)

type refundArgs struct {
	OrderID     string `json:"order_id"`
	AmountCents int    `json:"amount_cents"`
}

// harness runs the real agent loop with the taxonomy callbacks around a
// scripted model and a refund tool that counts its executions.
type harness struct {
	llm      *agenttest.ScriptedModel
	runner   *agent.Runner
	sessions *session.Memory
	metrics  *taxonomy.Metrics
	logs     *bytes.Buffer
	refunds  *atomic.Int32
	seen     []*model.Response // responses the after-model hook after ours saw
}

func newHarness(t *testing.T, opts taxonomy.CallbackOptions, steps ...agenttest.Step) *harness {
	t.Helper()
	h := &harness{
		llm:      agenttest.NewScriptedModel(steps...),
		sessions: session.NewMemory(),
		metrics:  taxonomy.NewMetrics(nil),
		logs:     &bytes.Buffer{},
		refunds:  &atomic.Int32{},
	}
	opts.Metrics = h.metrics
	opts.Logger = zerolog.New(h.logs)
	refund := tool.MustFunc("refund_order", "Refund an order.",
		func(ctx context.Context, a refundArgs) (map[string]any, error) {
			h.refunds.Add(1)
			return tool.OK(map[string]any{"order_id": a.OrderID}), nil
		})
	h.runner = &agent.Runner{
		Agent: &agent.Agent{
			Name:  "support",
			Model: h.llm,
			Tools: []tool.Tool{refund},
			Callbacks: agent.Callbacks{
				OnModelError: []agent.OnModelErrorCallback{taxonomy.OnModelError(opts)},
				AfterModel: []agent.AfterModelCallback{
					taxonomy.AfterModel(opts),
					func(ctx context.Context, cc *agent.CallbackContext, resp *model.Response) (*model.Response, error) {
						h.seen = append(h.seen, resp)
						return nil, nil
					},
				},
			},
			MaxModelCalls: 10,
		},
		Sessions: h.sessions,
	}
	return h
}

func (h *harness) run(t *testing.T, inv string) ([]*session.Event, *session.Session, error) {
	t.Helper()
	events, err := agenttest.Collect(h.runner.Run(context.Background(), agent.RunRequest{
		InvocationID: inv, UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "Please refund order A-1042"),
	}))
	sess, gerr := h.sessions.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "s1"})
	if gerr != nil {
		t.Fatalf("get session: %v", gerr)
	}
	return events, sess, err
}

func failures(m *taxonomy.Metrics, modelName string, c taxonomy.Class, ch taxonomy.Channel) float64 {
	return testutil.ToFloat64(m.Failures.WithLabelValues(modelName, string(c), string(ch)))
}

func refundThenFail(t *testing.T, err error) []agenttest.Step {
	t.Helper()
	return []agenttest.Step{
		agenttest.Reply(agenttest.Call("refund_order", map[string]any{"order_id": "A-1042", "amount_cents": 1299})),
		agenttest.Fail(err),
	}
}

// A transient failure after a refund ran: the degraded message replaces the
// error, passes through the after-model callbacks, and says the refund was
// completed instead of claiming nothing happened.
func TestOnModelError_DegradesAndNamesCompletedRefund(t *testing.T) {
	providerErr := taxonomytest.GeminiError(t, 503, "UNAVAILABLE", "The model is overloaded.")
	h := newHarness(t, taxonomy.CallbackOptions{
		DescribeTool: func(ct agent.CompletedTool) string {
			if ct.Name == "refund_order" {
				return "your refund for order " + ct.Args["order_id"].(string)
			}
			return ct.Name
		},
	}, refundThenFail(t, providerErr)...)

	events, sess, err := h.run(t, "inv-degrade")
	if err != nil {
		t.Fatalf("invocation failed: %v", err)
	}
	final := agenttest.FinalText(events)
	if !strings.HasPrefix(final, "Your refund for order A-1042 was completed, but I could not finish") {
		t.Fatalf("degraded message does not name the completed refund: %q", final)
	}
	if h.refunds.Load() != 1 {
		t.Fatalf("refund ran %d times", h.refunds.Load())
	}
	// The substitute went through the after-model chain (our hook after
	// taxonomy.AfterModel saw it).
	if len(h.seen) != 2 || h.seen[1].Content.Text() != final {
		t.Fatalf("after-model did not see the substitute: %d responses", len(h.seen))
	}
	if got := sess.State[taxonomy.StateErrorClass]; got != string(taxonomy.Server) {
		t.Fatalf("state %s = %v, want SERVER", taxonomy.StateErrorClass, got)
	}
	if sess.State[taxonomy.StateDegraded] != true || sess.State[taxonomy.StateErrorInvocation] != "inv-degrade" ||
		sess.State[taxonomy.StateErrorChannel] != string(taxonomy.ChannelThrown) {
		t.Fatalf("state = %v", sess.State)
	}
	if n := failures(h.metrics, "scripted", taxonomy.Server, taxonomy.ChannelThrown); n != 1 {
		t.Fatalf("SERVER failures counted %v, want 1", n)
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(h.logs.Bytes()), &line); err != nil {
		t.Fatalf("want one JSON log line, got %q: %v", h.logs.String(), err)
	}
	if line["class"] != "SERVER" || !strings.Contains(line["raw"].(string), "The model is overloaded.") || line["level"] != "warn" {
		t.Fatalf("log line %v", line)
	}
}

func TestOnModelError_DefaultMessageNamesToolAndArgs(t *testing.T) {
	h := newHarness(t, taxonomy.CallbackOptions{}, refundThenFail(t, &model.ProviderError{Provider: "sim", StatusCode: 429})...)
	events, _, err := h.run(t, "inv-default")
	if err != nil {
		t.Fatalf("invocation failed: %v", err)
	}
	final := agenttest.FinalText(events)
	for _, want := range []string{"refund_order", "order_id=A-1042", "was completed", "could not finish"} {
		if !strings.Contains(final, want) {
			t.Fatalf("degraded message %q lacks %q", final, want)
		}
	}
}

func TestOnModelError_NoToolsSaysNotCompleted(t *testing.T) {
	h := newHarness(t, taxonomy.CallbackOptions{}, agenttest.Fail(&model.ProviderError{Provider: "sim", StatusCode: 503}))
	events, _, err := h.run(t, "inv-none")
	if err != nil {
		t.Fatal(err)
	}
	if final := agenttest.FinalText(events); !strings.HasPrefix(final, "Your request was not completed") {
		t.Fatalf("message %q", final)
	}
}

// Configuration errors, quota, budget and unknowns escalate: the callback
// returns nil and the runner ends with the original error.
func TestOnModelError_Escalates(t *testing.T) {
	cases := []struct {
		name string
		err  func(t *testing.T) error
		want taxonomy.Class
	}{
		{"auth", func(t *testing.T) error {
			return taxonomytest.GeminiError(t, 401, "UNAUTHENTICATED", "API key not valid")
		}, taxonomy.Auth},
		{"not found", func(t *testing.T) error { return taxonomytest.GeminiError(t, 404, "NOT_FOUND", "model not found") }, taxonomy.NotFound},
		{"bad request", func(t *testing.T) error {
			return taxonomytest.OpenAIError(t, 400, nil, "invalid_request_error", "", "bad")
		}, taxonomy.BadRequest},
		{"quota", func(t *testing.T) error {
			return taxonomytest.OpenAIError(t, 429, nil, "insufficient_quota", "insufficient_quota", "You exceeded your current quota")
		}, taxonomy.QuotaExhausted},
		{"unknown", func(t *testing.T) error { return errors.New("weird") }, taxonomy.Unknown},
		{"call budget", func(t *testing.T) error { return &model.CallBudgetError{Limit: 1, Attempted: 2} }, taxonomy.CallBudget},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, taxonomy.CallbackOptions{}, refundThenFail(t, tc.err(t))...)
			_, _, err := h.run(t, "inv-"+tc.name)
			if err == nil {
				t.Fatal("error was swallowed")
			}
			var me *agent.ModelError
			if !errors.As(err, &me) {
				t.Fatalf("want *agent.ModelError, got %T: %v", err, err)
			}
			if got := taxonomy.ClassifyError(err); got != tc.want {
				t.Fatalf("escalated error classifies as %s, want %s", got, tc.want)
			}
			if n := failures(h.metrics, "scripted", tc.want, taxonomy.ChannelThrown); n != 1 {
				t.Fatalf("failure counted %v times, want 1", n)
			}
			if taxonomy.PolicyFor(tc.want).Page != strings.Contains(h.logs.String(), `"level":"error"`) {
				t.Fatalf("page classes log at error level, others at warn: %s", h.logs.String())
			}
		})
	}
}

func TestOnModelError_CanceledIsNotAFailure(t *testing.T) {
	m := taxonomy.NewMetrics(nil)
	cb := taxonomy.OnModelError(taxonomy.CallbackOptions{Metrics: m})
	resp, err := cb(context.Background(), nil, &model.Request{Model: "m"}, errors.Join(context.Canceled, &model.ProviderError{StatusCode: 503}))
	if resp != nil || err != nil {
		t.Fatalf("cancellation must escalate untouched, got %v, %v", resp, err)
	}
	if n := testutil.CollectAndCount(m.Failures); n != 0 {
		t.Fatalf("cancellation counted as failure (%d series)", n)
	}
	// Without a callback context a transient failure still degrades.
	resp, _ = cb(context.Background(), nil, &model.Request{Model: "m"}, &model.ProviderError{StatusCode: 503})
	if resp == nil || !resp.TurnComplete || resp.Content.Text() == "" {
		t.Fatalf("no degraded response: %+v", resp)
	}
}

func TestAfterModel_InBand(t *testing.T) {
	text := model.NewTextContent(model.RoleModel, "half a sent")
	cases := []struct {
		name      string
		resp      *model.Response
		class     taxonomy.Class
		refused   bool
		truncated bool
		then      *model.Response // the model's next answer, when the loop asks again
	}{
		{"safety stop is refused", &model.Response{FinishReason: model.FinishReasonSafety, ErrorCode: model.FinishReasonSafety, ErrorMessage: "blocked: harassment"}, taxonomy.OutputBlocked, true, false, nil},
		{"blocked prompt is refused", &model.Response{ErrorCode: model.FinishReasonProhibitedContent, ErrorMessage: "prompt blocked"}, taxonomy.PromptBlocked, true, false, nil},
		{"truncation is flagged and left alone", &model.Response{Content: text, FinishReason: model.FinishReasonMaxTokens, TurnComplete: true}, taxonomy.Truncated, false, true, nil},
		{"empty response is UNKNOWN and left alone", &model.Response{}, taxonomy.Unknown, false, false, nil},
		// Left alone and counted; the loop asks the model again (it may
		// correct itself within the call budget).
		{"malformed call is TOOL_PROTOCOL and left alone", &model.Response{FinishReason: model.FinishReasonMalformedFunctionCall, ErrorCode: model.FinishReasonMalformedFunctionCall}, taxonomy.ToolProtocol, false, false,
			agenttest.Text("Order A-1042 is on its way.")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			steps := []agenttest.Step{agenttest.Reply(tc.resp)}
			if tc.then != nil {
				steps = append(steps, agenttest.Reply(tc.then))
			}
			h := newHarness(t, taxonomy.CallbackOptions{Model: "gemini-2.5-flash"}, steps...)
			events, sess, err := h.run(t, "inv-inband")
			if err != nil {
				t.Fatal(err)
			}
			final := events[len(events)-1]
			if tc.refused != (final.Content.Text() == taxonomy.DefaultRefusal) {
				t.Fatalf("final text %q (refused want %v)", final.Content.Text(), tc.refused)
			}
			if tc.then != nil {
				if final.Content.Text() != tc.then.Content.Text() || events[len(events)-2].FinishReason != tc.resp.FinishReason {
					t.Fatalf("events end %q after finish %q, want the break left alone and then the model's next answer",
						final.Content.Text(), events[len(events)-2].FinishReason)
				}
			} else if !tc.refused && final.FinishReason != tc.resp.FinishReason {
				t.Fatalf("response was changed: finish %q", final.FinishReason)
			}
			if sess.State[taxonomy.StateErrorClass] != string(tc.class) || sess.State[taxonomy.StateErrorChannel] != string(taxonomy.ChannelInBand) {
				t.Fatalf("state %v, want class %s in band", sess.State, tc.class)
			}
			if (sess.State[taxonomy.StateTruncated] == true) != tc.truncated {
				t.Fatalf("truncated flag %v, want %v", sess.State[taxonomy.StateTruncated], tc.truncated)
			}
			if n := failures(h.metrics, "gemini-2.5-flash", tc.class, taxonomy.ChannelInBand); n != 1 {
				t.Fatalf("in-band failure counted %v", n)
			}
			if tc.resp.ErrorMessage != "" && !strings.Contains(h.logs.String(), tc.resp.ErrorMessage) {
				t.Fatalf("raw message not logged: %s", h.logs.String())
			}
		})
	}
}

func TestAfterModel_HealthyRecordsNothing(t *testing.T) {
	h := newHarness(t, taxonomy.CallbackOptions{}, agenttest.Reply(agenttest.Text("Refunded.")))
	events, sess, err := h.run(t, "inv-ok")
	if err != nil {
		t.Fatal(err)
	}
	if agenttest.FinalText(events) != "Refunded." {
		t.Fatalf("healthy response changed")
	}
	if _, ok := sess.State[taxonomy.StateErrorClass]; ok || h.logs.Len() != 0 || testutil.CollectAndCount(h.metrics.Failures) != 0 {
		t.Fatalf("healthy response recorded a failure: state %v logs %q", sess.State, h.logs.String())
	}
}

func TestFlagStateKey(t *testing.T) {
	if taxonomy.FlagStateKey(taxonomy.Truncated) != taxonomy.StateTruncated {
		t.Fatalf("FlagStateKey(TRUNCATED) = %q", taxonomy.FlagStateKey(taxonomy.Truncated))
	}
}

func TestMetrics_RegisterAndNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := taxonomy.NewMetrics(reg)
	m.ModelCall("gemini")
	m.ProviderAttempt("gemini")
	m.ProviderAttempt("gemini")
	m.RetryBudgetRefusal("gemini")
	m.Failure(taxonomy.Failure{Class: taxonomy.RateLimited, Channel: taxonomy.ChannelThrown, Model: "gemini", Raw: "secret text"})
	m.Failure(taxonomy.Failure{Class: "NOT_A_CLASS", Model: "gemini"})
	m.Failure(taxonomy.Failure{Class: taxonomy.Canceled, Model: "gemini"})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if strings.Contains(l.GetValue(), "secret") {
					t.Fatalf("raw message leaked into label %s", l.GetName())
				}
			}
		}
	}
	for _, n := range []string{taxonomy.MetricModelCalls, taxonomy.MetricProviderAttempts, taxonomy.MetricModelFailures, taxonomy.MetricRetryBudgetRefusals} {
		if !names[n] {
			t.Errorf("metric %s not registered", n)
		}
	}
	if v := testutil.ToFloat64(m.ProviderAttempts.WithLabelValues("gemini")); v != 2 {
		t.Fatalf("attempts = %v", v)
	}
	if v := failures(m, "gemini", taxonomy.Unknown, taxonomy.ChannelThrown); v != 1 {
		t.Fatalf("stray class not folded into UNKNOWN: %v", v)
	}
	if n := testutil.CollectAndCount(m.Failures); n != 2 {
		t.Fatalf("%d failure series, want 2 (cancellation is not counted)", n)
	}
	var nilMetrics *taxonomy.Metrics
	nilMetrics.ModelCall("x") // must not panic
	nilMetrics.Failure(taxonomy.Failure{Class: taxonomy.Server})
}
