package openai

import (
	"context"
	"errors"
	"math"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/openai/openai-go/v3"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
)

const textOK = `{
  "id": "chatcmpl-abc123", "object": "chat.completion", "created": 1700000000, "model": "gpt-4.1-mini-2025-04-14",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there.", "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
  "system_fingerprint": "fp_1"
}`

func completion(message, finish string) string {
	return `{"id": "chatcmpl-x", "object": "chat.completion", "created": 1700000000, "model": "gpt-4.1-mini",
	  "choices": [{"index": 0, "message": ` + message + `, "logprobs": null, "finish_reason": ` + finish + `}]}`
}

func TestConfigValidate(t *testing.T) {
	good := Config{APIKey: "k", Model: "gpt-4.1-mini"}.WithDefaults()
	if err := good.Validate(); err != nil || good.BaseURL != DefaultBaseURL {
		t.Fatalf("valid config: %v %+v", err, good)
	}
	if err := (Config{Model: "llama3.1", BaseURL: "http://localhost:11434/v1/"}).Validate(); err != nil {
		t.Errorf("local server without key: %v", err)
	}
	for name, c := range map[string]Config{
		"no model":        {APIKey: "k"},
		"openai no key":   {Model: "m"},
		"relative url":    {Model: "m", BaseURL: "/v1"},
		"bad scheme":      {Model: "m", BaseURL: "ftp://x/v1"},
		"unparseable url": {Model: "m", BaseURL: "http://[::1"},
	} {
		if err := c.WithDefaults().Validate(); err == nil {
			t.Errorf("%s: Validate() = nil", name)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New() = nil error", name)
		}
	}
}

func TestGenerateText(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "env-key-must-not-be-used")
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f)
	temp, topP, seed := float32(0.5), float32(0.9), int32(42)
	req := userText("hi")
	req.SystemInstruction = "You are a support agent."
	req.Config = model.GenerateConfig{Temperature: &temp, TopP: &topP, MaxOutputTokens: 128, StopSequences: []string{"END"}, Seed: &seed, ResponseMIMEType: "application/json"}
	resp, err := one(t, m, req)
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if resp.Content.Text() != "Hello there." || resp.Content.Role != model.RoleModel {
		t.Errorf("content = %+v", resp.Content)
	}
	if resp.FinishReason != model.FinishReasonStop || resp.ErrorCode != "" || resp.Partial || !resp.TurnComplete {
		t.Errorf("resp = %+v", resp)
	}
	if resp.ProviderRequestID != "chatcmpl-abc123" || resp.ModelVersion != "gpt-4.1-mini-2025-04-14" {
		t.Errorf("ids: %q %q", resp.ProviderRequestID, resp.ModelVersion)
	}
	if want := (&model.Usage{PromptTokens: 11, CandidatesTokens: 3, TotalTokens: 14}); !reflect.DeepEqual(resp.Usage, want) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	rec := f.last(t)
	if rec.Method != http.MethodPost || rec.Path != "/v1/chat/completions" {
		t.Errorf("request = %s %s", rec.Method, rec.Path)
	}
	if got := rec.Header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
	body := bodyMap(t, rec)
	if body["model"] != "gpt-4.1-mini" || body["max_completion_tokens"] != float64(128) || body["seed"] != float64(42) || body["temperature"] != 0.5 {
		t.Errorf("body = %v", body)
	}
	if math.Abs(body["top_p"].(float64)-0.9) > 1e-6 {
		t.Errorf("top_p = %v", body["top_p"])
	}
	if _, has := body["stream"]; has {
		t.Errorf("non-streaming request has stream: %v", body["stream"])
	}
	if got := mustJSON(t, body["stop"]); got != `["END"]` {
		t.Errorf("stop = %s", got)
	}
	if got := dig(t, body, "response_format", "type"); got != "json_object" {
		t.Errorf("response_format = %v", got)
	}
	if got := mustJSON(t, body["messages"]); got != `[{"content":"You are a support agent.","role":"system"},{"content":"hi","role":"user"}]` {
		t.Errorf("messages = %s", got)
	}
	if f.count() != 1 {
		t.Errorf("requests = %d", f.count())
	}
}

func TestLegacyMaxTokensAndModelOverride(t *testing.T) {
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f, func(c *Config) { c.LegacyMaxTokens = true; c.APIKey = "" })
	req := userText("hi")
	req.Model = "llama3.1:8b"
	req.Config.MaxOutputTokens = 64
	if _, err := one(t, m, req); err != nil {
		t.Fatal(err)
	}
	body := bodyMap(t, f.last(t))
	if body["max_tokens"] != float64(64) || body["max_completion_tokens"] != nil || body["model"] != "llama3.1:8b" {
		t.Errorf("body = %v", body)
	}
	if m.Name() != "gpt-4.1-mini" {
		t.Errorf("Name() = %q", m.Name())
	}
}

type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order id"`
}

func TestFunctionCallRoundTrip(t *testing.T) {
	f := newFake(t, jsonHandler(200, completion(`{"role": "assistant", "content": null, "refusal": null,
	   "tool_calls": [{"id": "call_R1", "type": "function", "function": {"name": "refund_order", "arguments": "{\"order_id\":\"A-1042\",\"amount_cents\":1299,\"reason\":\"damaged\"}"}}]}`, `"tool_calls"`)))
	m := newTestModel(t, f)
	schema, err := jsonschema.For[orderArgs](nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{
		Contents: []*model.Content{
			model.NewTextContent(model.RoleUser, "refund A-1042"),
			{Role: model.RoleModel, Parts: []*model.Part{{Text: "Checking."}, {FunctionCall: &model.FunctionCall{ID: "call_G1", Name: "get_order", Args: map[string]any{"order_id": "A-1042"}}}}},
			{Role: model.RoleUser, Parts: []*model.Part{{FunctionResponse: &model.FunctionResponse{ID: "call_G1", Name: "get_order",
				Response: map[string]any{"status": "ok", "amount_cents": 1299}}}}},
		},
		Tools: []*model.ToolDeclaration{{Name: "get_order", Description: "Look up an order.", Parameters: schema}, {Name: "ping"}},
	}
	resp, err := one(t, m, req)
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	calls := resp.FunctionCalls()
	if len(calls) != 1 || calls[0].ID != "call_R1" || calls[0].Name != "refund_order" {
		t.Fatalf("calls = %+v", calls)
	}
	if a := calls[0].Args; a["order_id"] != "A-1042" || a["amount_cents"] != float64(1299) || a["reason"] != "damaged" {
		t.Errorf("args = %v", a)
	}
	if resp.FinishReason != model.FinishReasonStop || resp.ErrorCode != "" {
		t.Errorf("finish=%q code=%q", resp.FinishReason, resp.ErrorCode)
	}
	body := bodyMap(t, f.last(t))
	msgs := body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages = %s", mustJSON(t, msgs))
	}
	if got := mustJSON(t, msgs[1]); got != `{"content":"Checking.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"order_id\":\"A-1042\"}","name":"get_order"},"id":"call_G1","type":"function"}]}` {
		t.Errorf("assistant message = %s", got)
	}
	if got := mustJSON(t, msgs[2]); got != `{"content":"{\"amount_cents\":1299,\"status\":\"ok\"}","role":"tool","tool_call_id":"call_G1"}` {
		t.Errorf("tool message = %s", got)
	}
	tools := body["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools = %s", mustJSON(t, tools))
	}
	if dig(t, tools[0], "type") != "function" || dig(t, tools[0], "function", "name") != "get_order" || dig(t, tools[0], "function", "description") != "Look up an order." {
		t.Errorf("tool = %s", mustJSON(t, tools[0]))
	}
	if dig(t, tools[0], "function", "parameters", "properties", "order_id", "type") != "string" {
		t.Errorf("parameters = %s", mustJSON(t, dig(t, tools[0], "function", "parameters")))
	}
	if _, has := dig(t, tools[1], "function").(map[string]any)["parameters"]; has {
		t.Errorf("tool without parameters sent some: %s", mustJSON(t, tools[1]))
	}
}

func TestUserTurnWithTextAndResponses(t *testing.T) {
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f)
	req := &model.Request{Contents: []*model.Content{
		{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{ID: "c1", Name: "a"}}, {FunctionCall: &model.FunctionCall{ID: "c2", Name: "b"}}}},
		{Role: model.RoleUser, Parts: []*model.Part{{Text: "also this"}, {FunctionResponse: &model.FunctionResponse{ID: "c1", Name: "a"}}, {FunctionResponse: &model.FunctionResponse{ID: "c2", Name: "b", Response: map[string]any{"x": 1}}}}},
		{Role: model.RoleModel, Parts: []*model.Part{nil}},
	}}
	if _, err := one(t, m, req); err != nil {
		t.Fatal(err)
	}
	got := mustJSON(t, bodyMap(t, f.last(t))["messages"])
	want := `[{"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"a"},"id":"c1","type":"function"},{"function":{"arguments":"{}","name":"b"},"id":"c2","type":"function"}]},` +
		`{"content":"{}","role":"tool","tool_call_id":"c1"},{"content":"{\"x\":1}","role":"tool","tool_call_id":"c2"},{"content":"also this","role":"user"}]`
	if got != want {
		t.Errorf("messages =\n%s\nwant\n%s", got, want)
	}
}

func TestUnencodableArgs(t *testing.T) {
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f)
	req := &model.Request{Contents: []*model.Content{{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{Name: "x", Args: map[string]any{"v": math.Inf(1)}}}}}}}
	if _, err := one(t, m, req); err == nil {
		t.Fatal("want error")
	}
	if f.count() != 0 {
		t.Errorf("requests = %d", f.count())
	}
}

// inBandCase is an HTTP 200 that carries bad news.
type inBandCase struct {
	name        string
	body        string
	wantFinish  model.FinishReason
	wantCode    model.FinishReason
	wantMessage string
	wantText    string
	wantCalls   int
}

var inBandCases = []inBandCase{
	{name: "content filter without content", body: completion(`{"role": "assistant", "content": null}`, `"content_filter"`),
		wantFinish: model.FinishReasonSafety, wantCode: model.FinishReasonSafety, wantMessage: "content_filter"},
	{name: "length with partial text", body: completion(`{"role": "assistant", "content": "Your refund of 12"}`, `"length"`),
		wantFinish: model.FinishReasonMaxTokens, wantText: "Your refund of 12"},
	{name: "length without text", body: completion(`{"role": "assistant", "content": ""}`, `"length"`),
		wantFinish: model.FinishReasonMaxTokens, wantCode: model.FinishReasonMaxTokens, wantMessage: "length"},
	{name: "refusal", body: completion(`{"role": "assistant", "content": null, "refusal": "I can't help with that."}`, `"stop"`),
		wantFinish: model.FinishReasonSafety, wantCode: model.FinishReasonSafety, wantMessage: "I can't help with that."},
	{name: "malformed arguments", body: completion(`{"role": "assistant", "content": null, "tool_calls": [
	    {"id": "call_1", "type": "function", "function": {"name": "get_order", "arguments": "{\"order_id\": \"A-1"}}]}`, `"tool_calls"`),
		wantFinish: model.FinishReasonMalformedFunctionCall, wantCode: model.FinishReasonMalformedFunctionCall, wantMessage: `{"order_id": "A-1`},
	{name: "arguments not an object", body: completion(`{"role": "assistant", "content": "ok", "tool_calls": [
	    {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
	    {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": "[1,2]"}}]}`, `"tool_calls"`),
		wantFinish: model.FinishReasonMalformedFunctionCall, wantCode: model.FinishReasonMalformedFunctionCall, wantMessage: `[1,2]`, wantText: "ok"},
	{name: "empty arguments are no arguments", body: completion(`{"role": "assistant", "content": null, "tool_calls": [
	    {"id": "call_1", "type": "function", "function": {"name": "ping", "arguments": ""}}]}`, `"tool_calls"`),
		wantFinish: model.FinishReasonStop, wantCalls: 1},
	{name: "legacy function_call", body: completion(`{"role": "assistant", "content": null, "function_call": {"name": "ping", "arguments": "{\"a\":1}"}}`, `"function_call"`),
		wantFinish: model.FinishReasonStop, wantCalls: 1},
	{name: "unknown finish reason kept verbatim", body: completion(`{"role": "assistant", "content": null}`, `"eos_token"`),
		wantFinish: "eos_token", wantCode: "eos_token", wantMessage: "eos_token"},
	{name: "stop without content", body: completion(`{"role": "assistant", "content": ""}`, `"stop"`),
		wantFinish: model.FinishReasonStop},
	{name: "no choices", body: `{"id": "chatcmpl-x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}`,
		wantCode: model.ErrorCodeUnknown, wantMessage: "Unknown error."},
	{name: "empty object", body: `{}`, wantCode: model.ErrorCodeUnknown, wantMessage: "Unknown error."},
}

func TestInBand(t *testing.T) {
	for _, tc := range inBandCases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, jsonHandler(200, tc.body))
			m := newTestModel(t, f)
			resp, err := one(t, m, userText("hi"))
			if err != nil {
				t.Fatalf("in-band failure returned as error: %v", err)
			}
			checkInBand(t, resp, tc)
		})
	}
}

func checkInBand(t *testing.T, resp *model.Response, tc inBandCase) {
	t.Helper()
	if resp.FinishReason != tc.wantFinish || resp.ErrorCode != tc.wantCode || resp.ErrorMessage != tc.wantMessage {
		t.Errorf("finish=%q code=%q msg=%q, want %q %q %q", resp.FinishReason, resp.ErrorCode, resp.ErrorMessage, tc.wantFinish, tc.wantCode, tc.wantMessage)
	}
	if got := resp.Content.Text(); got != tc.wantText {
		t.Errorf("text = %q, want %q", got, tc.wantText)
	}
	if n := len(resp.FunctionCalls()); n != tc.wantCalls {
		t.Errorf("function calls = %d, want %d", n, tc.wantCalls)
	}
	if tc.wantText == "" && tc.wantCalls == 0 && resp.Content != nil {
		t.Errorf("content = %+v, want nil", resp.Content)
	}
	if !resp.TurnComplete || resp.Partial {
		t.Errorf("turnComplete=%v partial=%v", resp.TurnComplete, resp.Partial)
	}
}

// apiErrorCase is a thrown-channel wire case.
type apiErrorCase struct {
	name     string
	status   int
	body     string
	wantCode string
}

var apiErrorCases = []apiErrorCase{
	{"rate limited", 429, `{"error": {"message": "Rate limit reached for gpt-4.1-mini in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}`, "rate_limit_exceeded"},
	{"insufficient quota", 429, `{"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}`, "insufficient_quota"},
	{"unavailable", 503, `{"error": {"message": "The engine is currently overloaded, please try again later", "type": "server_error", "param": null, "code": null}}`, ""},
	{"internal", 500, `{"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}`, ""},
	{"model not found", 404, `{"error": {"message": "The model 'gpt-9' does not exist or you do not have access to it.", "type": "invalid_request_error", "param": null, "code": "model_not_found"}}`, "model_not_found"},
	{"invalid api key", 401, `{"error": {"message": "Incorrect API key provided: sk-xxx.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}`, "invalid_api_key"},
	{"bad request", 400, `{"error": {"message": "Invalid value for 'temperature'.", "type": "invalid_request_error", "param": "temperature", "code": "invalid_value"}}`, "invalid_value"},
}

func TestThrownErrors(t *testing.T) {
	for _, tc := range apiErrorCases {
		for _, stream := range []bool{false, true} {
			name := tc.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
					// The SDK would retry on these headers if retries were on.
					w.Header().Set("x-should-retry", "true")
					w.Header().Set("retry-after-ms", "1")
					jsonHandler(tc.status, tc.body)(w, r)
				})
				m := newTestModel(t, f)
				resps, errs := collect(testCtx(t), m, userText("hi"), stream)
				if len(resps) != 0 || len(errs) != 1 {
					t.Fatalf("got %d responses, %d errors; want 0 and 1", len(resps), len(errs))
				}
				var apiErr *openai.Error
				if !errors.As(errs[0], &apiErr) {
					t.Fatalf("errors.As(*openai.Error) failed for %T: %v", errs[0], errs[0])
				}
				if apiErr.StatusCode != tc.status || apiErr.Code != tc.wantCode {
					t.Errorf("status=%d code=%q, want %d %q", apiErr.StatusCode, apiErr.Code, tc.status, tc.wantCode)
				}
				if f.count() != 1 {
					t.Errorf("HTTP requests = %d, want exactly 1 (SDK retries must be off)", f.count())
				}
			})
		}
	}
}

// TestNonStandardErrorBodies: a proxy's HTML page still gives *openai.Error
// with the status; a body whose "error" is a plain string (some
// OpenAI-compatible servers) gives a *model.ProviderError with status and
// text, so the status is never lost.
func TestNonStandardErrorBodies(t *testing.T) {
	for _, stream := range []bool{false, true} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
		})
		m := newTestModel(t, f)
		_, errs := collect(testCtx(t), m, userText("hi"), stream)
		var apiErr *openai.Error
		if len(errs) != 1 || !errors.As(errs[0], &apiErr) || apiErr.StatusCode != 502 {
			t.Errorf("html, stream=%v: errs = %v", stream, errs)
		}

		f = newFake(t, jsonHandler(404, `{"error": "model \"llama9\" not found, try pulling it first"}`))
		m = newTestModel(t, f)
		_, errs = collect(testCtx(t), m, userText("hi"), stream)
		var pe *model.ProviderError
		if len(errs) != 1 || !errors.As(errs[0], &pe) {
			t.Fatalf("string error, stream=%v: errs = %v", stream, errs)
		}
		if pe.StatusCode != 404 || pe.Provider != ProviderName || pe.Message != `model "llama9" not found, try pulling it first` || pe.Err == nil {
			t.Errorf("string error, stream=%v: %+v", stream, pe)
		}
		if f.count() != 1 {
			t.Errorf("requests = %d", f.count())
		}

		// A 429 with such a body still carries the server's Retry-After
		// to the one retry layer.
		f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			jsonHandler(429, `{"error": "slow down"}`)(w, r)
		})
		m = newTestModel(t, f)
		_, errs = collect(testCtx(t), m, userText("hi"), stream)
		if len(errs) != 1 || !errors.As(errs[0], &pe) || pe.StatusCode != 429 || pe.RetryAfter != 30*time.Second {
			t.Errorf("string error with Retry-After, stream=%v: errs %v (%+v)", stream, errs, pe)
		}
		if d, ok := retry.ServerHint(errs[0], time.Now()); !ok || d != 30*time.Second {
			t.Errorf("string error with Retry-After, stream=%v: the retry layer sees hint %v, %v", stream, d, ok)
		}
	}
}

func TestOneRequestOn503(t *testing.T) {
	f := newFake(t, jsonHandler(503, `{"error": {"message": "overloaded", "type": "server_error", "code": null}}`))
	m := newTestModel(t, f)
	for i := 1; i <= 3; i++ {
		if _, err := one(t, m, userText("hi")); err == nil {
			t.Fatal("want error")
		}
		if f.count() != i {
			t.Fatalf("after %d calls the server saw %d requests", i, f.count())
		}
	}
}

func TestTransportError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		_ = conn.Close()
	})
	m := newTestModel(t, f)
	_, err := one(t, m, userText("hi"))
	var apiErr *openai.Error
	if err == nil || errors.As(err, &apiErr) {
		t.Fatalf("err = %v", err)
	}
	if f.count() != 1 {
		t.Errorf("requests = %d, want 1", f.count())
	}
}

func TestContextCanceled(t *testing.T) {
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, stream := range []bool{false, true} {
		_, errs := collect(ctx, m, userText("hi"), stream)
		if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
			t.Errorf("stream=%v: errs = %v", stream, errs)
		}
	}
}

func TestFromChatCompletionNil(t *testing.T) {
	if r := FromChatCompletion(nil); r.ErrorCode != model.ErrorCodeUnknown {
		t.Fatalf("got %+v", r)
	}
}

func TestMapFinishReason(t *testing.T) {
	for in, want := range map[string]model.FinishReason{
		"stop": model.FinishReasonStop, "length": model.FinishReasonMaxTokens, "content_filter": model.FinishReasonSafety,
		"tool_calls": model.FinishReasonStop, "function_call": model.FinishReasonStop, "": "", "new_thing": "new_thing",
	} {
		if got := MapFinishReason(in); got != want {
			t.Errorf("MapFinishReason(%q) = %q, want %q", in, got, want)
		}
	}
}
