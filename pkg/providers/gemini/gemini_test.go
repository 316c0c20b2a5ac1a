package gemini

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

const textOK = `{
  "candidates": [{
    "content": {"role": "model", "parts": [{"text": "Hello there."}]},
    "finishReason": "STOP", "index": 0
  }],
  "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 3, "totalTokenCount": 14},
  "modelVersion": "gemini-2.5-flash-001",
  "responseId": "resp-abc123"
}`

func TestConfigValidate(t *testing.T) {
	good := Config{APIKey: "k", Model: "gemini-2.5-flash"}.WithDefaults()
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if good.BaseURL != DefaultBaseURL || good.APIVersion != DefaultAPIVersion {
		t.Fatalf("defaults not applied: %+v", good)
	}
	for name, c := range map[string]Config{
		"no key":       {Model: "m"},
		"no model":     {APIKey: "k"},
		"relative url": {APIKey: "k", Model: "m", BaseURL: "/v1"},
		"bad scheme":   {APIKey: "k", Model: "m", BaseURL: "ftp://x"},
	} {
		if err := c.WithDefaults().Validate(); err == nil {
			t.Errorf("%s: Validate() = nil, want error", name)
		}
		if _, err := New(context.Background(), c); err == nil {
			t.Errorf("%s: New() = nil error, want error", name)
		}
	}
}

func TestGenerateText(t *testing.T) {
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f)
	temp := float32(0.2)
	seed := int32(7)
	req := userText("hi")
	req.SystemInstruction = "You are a support agent."
	req.Config = model.GenerateConfig{Temperature: &temp, MaxOutputTokens: 256, StopSequences: []string{"END"}, Seed: &seed}

	resp, err := one(t, m, req)
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if got := resp.Content.Text(); got != "Hello there." {
		t.Errorf("text = %q", got)
	}
	if resp.Content.Role != model.RoleModel {
		t.Errorf("role = %q", resp.Content.Role)
	}
	if resp.FinishReason != model.FinishReasonStop || resp.ErrorCode != "" || resp.ErrorMessage != "" {
		t.Errorf("finish=%q code=%q msg=%q", resp.FinishReason, resp.ErrorCode, resp.ErrorMessage)
	}
	if resp.Partial || !resp.TurnComplete {
		t.Errorf("partial=%v turnComplete=%v", resp.Partial, resp.TurnComplete)
	}
	if resp.ProviderRequestID != "resp-abc123" || resp.ModelVersion != "gemini-2.5-flash-001" {
		t.Errorf("ids: %q %q", resp.ProviderRequestID, resp.ModelVersion)
	}
	if want := (&model.Usage{PromptTokens: 11, CandidatesTokens: 3, TotalTokens: 14}); !reflect.DeepEqual(resp.Usage, want) {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}

	rec := f.last(t)
	if rec.Method != http.MethodPost || rec.Path != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Errorf("request = %s %s", rec.Method, rec.Path)
	}
	if got := rec.Header.Get("x-goog-api-key"); got != "test-key" {
		t.Errorf("x-goog-api-key = %q", got)
	}
	body := bodyMap(t, rec)
	if got := dig(t, body, "systemInstruction", "parts", 0, "text"); got != "You are a support agent." {
		t.Errorf("systemInstruction = %v", got)
	}
	if got := dig(t, body, "contents", 0, "parts", 0, "text"); got != "hi" {
		t.Errorf("contents[0] text = %v", got)
	}
	if got := dig(t, body, "contents", 0, "role"); got != "user" {
		t.Errorf("contents[0] role = %v", got)
	}
	gen := dig(t, body, "generationConfig").(map[string]any)
	if gen["maxOutputTokens"] != float64(256) || gen["seed"] != float64(7) || math.Abs(gen["temperature"].(float64)-0.2) > 1e-6 {
		t.Errorf("generationConfig = %v", gen)
	}
	if got := mustJSON(t, gen["stopSequences"]); got != `["END"]` {
		t.Errorf("stopSequences = %s", got)
	}
	if f.count() != 1 {
		t.Errorf("requests = %d, want 1", f.count())
	}
}

func TestRequestModelOverridesConfig(t *testing.T) {
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f)
	req := userText("hi")
	req.Model = "gemini-2.5-pro"
	if _, err := one(t, m, req); err != nil {
		t.Fatal(err)
	}
	if p := f.last(t).Path; p != "/v1beta/models/gemini-2.5-pro:generateContent" {
		t.Errorf("path = %s", p)
	}
	if m.Name() != "gemini-2.5-flash" {
		t.Errorf("Name() = %q", m.Name())
	}
}

type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order id, e.g. A-1042"`
}

func TestFunctionCallRoundTrip(t *testing.T) {
	f := newFake(t, jsonHandler(200, `{
	  "candidates": [{"content": {"role": "model", "parts": [
	      {"text": "Refunding now."},
	      {"functionCall": {"name": "refund_order", "args": {"order_id": "A-1042", "amount_cents": 1299, "reason": "damaged"}}}
	    ]}, "finishReason": "STOP"}],
	  "responseId": "r-2"
	}`))
	m := newTestModel(t, f)
	schema, err := jsonschema.For[orderArgs](nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{
		Contents: []*model.Content{
			model.NewTextContent(model.RoleUser, "refund A-1042"),
			{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{ID: "call-1", Name: "get_order", Args: map[string]any{"order_id": "A-1042"}}}}},
			{Role: model.RoleUser, Parts: []*model.Part{{FunctionResponse: &model.FunctionResponse{ID: "call-1", Name: "get_order",
				Response: map[string]any{"status": "ok", "order_id": "A-1042", "amount_cents": 1299}}}}},
		},
		Tools: []*model.ToolDeclaration{{Name: "get_order", Description: "Look up an order.", Parameters: schema}, {Name: "ping"}},
	}
	resp, err := one(t, m, req)
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	calls := resp.FunctionCalls()
	if len(calls) != 1 {
		t.Fatalf("function calls = %d, want 1 (content %+v)", len(calls), resp.Content)
	}
	fc := calls[0]
	if fc.ID != "" || fc.Name != "refund_order" {
		t.Errorf("call = %+v (Gemini sent no id, the adapter must not invent one)", fc)
	}
	if fc.Args["order_id"] != "A-1042" || fc.Args["amount_cents"] != float64(1299) || fc.Args["reason"] != "damaged" {
		t.Errorf("args = %v", fc.Args)
	}
	if resp.Content.Parts[0].Text != "Refunding now." {
		t.Errorf("part order lost: %+v", resp.Content.Parts[0])
	}

	body := bodyMap(t, f.last(t))
	call := dig(t, body, "contents", 1, "parts", 0, "functionCall").(map[string]any)
	if call["id"] != "call-1" || call["name"] != "get_order" || dig(t, call, "args", "order_id") != "A-1042" {
		t.Errorf("sent functionCall = %v", call)
	}
	if role := dig(t, body, "contents", 1, "role"); role != "model" {
		t.Errorf("function call role = %v", role)
	}
	fr := dig(t, body, "contents", 2, "parts", 0, "functionResponse").(map[string]any)
	if fr["id"] != "call-1" || fr["name"] != "get_order" {
		t.Errorf("sent functionResponse = %v", fr)
	}
	if got := mustJSON(t, fr["response"]); got != `{"amount_cents":1299,"order_id":"A-1042","status":"ok"}` {
		t.Errorf("sent function response = %s", got)
	}
	decls := dig(t, body, "tools", 0, "functionDeclarations").([]any)
	if len(decls) != 2 {
		t.Fatalf("declarations = %d", len(decls))
	}
	d0 := decls[0].(map[string]any)
	if d0["name"] != "get_order" || d0["description"] != "Look up an order." {
		t.Errorf("declaration = %v", d0)
	}
	if got := dig(t, d0, "parametersJsonSchema", "properties", "order_id", "type"); got != "string" {
		t.Errorf("parametersJsonSchema order_id type = %v (decl %v)", got, d0)
	}
	if got := mustJSON(t, dig(t, d0, "parametersJsonSchema", "required")); got != `["order_id"]` {
		t.Errorf("required = %s", got)
	}
	if _, has := decls[1].(map[string]any)["parametersJsonSchema"]; has {
		t.Errorf("declaration without parameters sent a schema: %v", decls[1])
	}
}

func TestClientCallIDPrefixNotSent(t *testing.T) {
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f, func(c *Config) { c.ClientCallIDPrefix = "adk-" })
	req := &model.Request{Contents: []*model.Content{
		{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{ID: "adk-7", Name: "get_order"}}}},
		{Role: model.RoleUser, Parts: []*model.Part{{FunctionResponse: &model.FunctionResponse{ID: "adk-7", Name: "get_order"}}}},
		{Role: model.RoleModel, Parts: []*model.Part{nil, {}}}, // nothing usable: dropped
	}}
	if _, err := one(t, m, req); err != nil {
		t.Fatal(err)
	}
	body := bodyMap(t, f.last(t))
	if _, has := dig(t, body, "contents", 0, "parts", 0, "functionCall").(map[string]any)["id"]; has {
		t.Error("client-assigned call id was sent")
	}
	fr := dig(t, body, "contents", 1, "parts", 0, "functionResponse").(map[string]any)
	if _, has := fr["id"]; has {
		t.Error("client-assigned response id was sent")
	}
	// genai's FunctionResponse.Response is omitempty: an empty map is not sent.
	if _, has := fr["response"]; has {
		t.Errorf("empty response sent as %v", fr["response"])
	}
	if n := len(dig(t, body, "contents").([]any)); n != 2 {
		t.Errorf("contents sent = %d, want 2 (empty content dropped)", n)
	}
}

func TestUnencodableArgsRefusedWithoutRequest(t *testing.T) {
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f)
	req := &model.Request{Contents: []*model.Content{
		{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{Name: "x", Args: map[string]any{"v": math.NaN()}}}}},
	}}
	if _, err := one(t, m, req); err == nil {
		t.Fatal("want an encode error")
	}
	if f.count() != 0 {
		t.Errorf("requests = %d, want 0", f.count())
	}
}

// apiErrorCase is a thrown-channel wire case.
type apiErrorCase struct {
	name       string
	status     int
	body       string
	wantCode   int
	wantStatus string
}

const retryInfo429 = `{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED",
  "details": [
    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"},
    {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "Learn more", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]}
  ]}}`

const quota429 = `{"error": {"code": 429, "message": "You exceeded your current quota, please check your plan and billing details.", "status": "RESOURCE_EXHAUSTED",
  "details": [
    {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
      "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
      "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
      "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
      "quotaValue": "250"}]},
    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "43s"}
  ]}}`

var apiErrorCases = []apiErrorCase{
	{"rate limited with RetryInfo", 429, retryInfo429, 429, "RESOURCE_EXHAUSTED"},
	{"quota per day", 429, quota429, 429, "RESOURCE_EXHAUSTED"},
	{"unavailable", 503, `{"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}`, 503, "UNAVAILABLE"},
	{"internal", 500, `{"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}}`, 500, "INTERNAL"},
	{"not found", 404, `{"error": {"code": 404, "message": "models/gemini-0.9 is not found for API version v1beta.", "status": "NOT_FOUND"}}`, 404, "NOT_FOUND"},
	{"unauthenticated", 401, `{"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}`, 401, "UNAUTHENTICATED"},
	{"permission denied", 403, `{"error": {"code": 403, "message": "Method doesn't allow unregistered callers.", "status": "PERMISSION_DENIED"}}`, 403, "PERMISSION_DENIED"},
	{"bad request", 400, `{"error": {"code": 400, "message": "Invalid JSON payload received. Unknown name \"tempratur\" at 'generation_config': Cannot find field.", "status": "INVALID_ARGUMENT",
	   "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "generation_config", "description": "Invalid JSON payload received. Unknown name \"tempratur\" at 'generation_config': Cannot find field."}]}]}}`, 400, "INVALID_ARGUMENT"},
	// A refused key is a 400 too; its ErrorInfo reason says it is the credential.
	{"api key invalid", 400, `{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
	   "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}`, 400, "INVALID_ARGUMENT"},
	// A proxy's HTML error page still becomes a genai.APIError with the HTTP code.
	{"html 502 from a proxy", 502, `<html><body>Bad Gateway</body></html>`, 502, "502 Bad Gateway"},
}

func TestThrownErrors(t *testing.T) {
	for _, tc := range apiErrorCases {
		for _, stream := range []bool{false, true} {
			name := tc.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				f := newFake(t, jsonHandler(tc.status, tc.body))
				m := newTestModel(t, f)
				resps, errs := collect(testCtx(t), m, userText("hi"), stream)
				if len(resps) != 0 || len(errs) != 1 {
					t.Fatalf("got %d responses, %d errors; want 0 and 1", len(resps), len(errs))
				}
				err := errs[0]
				var apiErr genai.APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("errors.As(genai.APIError) failed for %T: %v", err, err)
				}
				if apiErr.Code != tc.wantCode || apiErr.Status != tc.wantStatus {
					t.Errorf("APIError code=%d status=%q, want %d %q", apiErr.Code, apiErr.Status, tc.wantCode, tc.wantStatus)
				}
				if f.count() != 1 {
					t.Errorf("HTTP requests = %d, want exactly 1 (SDK retries must be off)", f.count())
				}
			})
		}
	}
}

func TestErrorDetailsKept(t *testing.T) {
	f := newFake(t, jsonHandler(429, quota429))
	m := newTestModel(t, f)
	_, err := one(t, m, userText("hi"))
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("not an APIError: %v", err)
	}
	var quotaID, delay string
	for _, d := range apiErr.Details {
		switch d["@type"] {
		case "type.googleapis.com/google.rpc.QuotaFailure":
			v := d["violations"].([]any)[0].(map[string]any)
			quotaID, _ = v["quotaId"].(string)
		case "type.googleapis.com/google.rpc.RetryInfo":
			delay, _ = d["retryDelay"].(string)
		}
	}
	if quotaID != "GenerateRequestsPerDayPerProjectPerModel-FreeTier" || delay != "43s" {
		t.Errorf("details lost: quotaId=%q retryDelay=%q (%v)", quotaID, delay, apiErr.Details)
	}
}

// TestOneRequestOn503 proves the SDK does not retry: a server that always
// answers 503 sees exactly one request per call, streaming or not.
func TestOneRequestOn503(t *testing.T) {
	f := newFake(t, jsonHandler(503, `{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}`))
	m := newTestModel(t, f)
	for i := 1; i <= 3; i++ {
		if _, err := one(t, m, userText("hi")); err == nil {
			t.Fatal("want error")
		}
		if f.count() != i {
			t.Fatalf("after %d calls the server saw %d requests", i, f.count())
		}
	}
	_, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 1 || f.count() != 4 {
		t.Fatalf("stream: errors=%d requests=%d, want 1 and 4", len(errs), f.count())
	}
}

func TestTransportErrorWrapped(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		_ = conn.Close()
	})
	m := newTestModel(t, f)
	_, err := one(t, m, userText("hi"))
	if err == nil {
		t.Fatal("want error")
	}
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		t.Errorf("a dropped connection is not an APIError: %v", err)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("transport error: %v", err) // the exact net/http error varies; it must be wrapped
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
			t.Errorf("stream=%v: errs = %v, want context.Canceled", stream, errs)
		}
	}
}

// sdkFinishMessage is what survives of a candidate's finishMessage on the
// wire: genai v1.77's Gemini API (mldev) response converter does not copy
// finishMessage, so it never reaches FromGenAI. If an SDK upgrade starts
// passing it, these cases fail and this helper should return msg.
func sdkFinishMessage(msg string) string { return "" }

// inBandCase is an HTTP 200 that carries bad news.
type inBandCase struct {
	name        string
	body        string
	wantFinish  model.FinishReason
	wantCode    model.FinishReason
	wantMessage string
	wantText    string
}

var inBandCases = []inBandCase{
	{
		name:       "safety stop without content",
		body:       `{"candidates": [{"finishReason": "SAFETY", "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": true}]}], "responseId": "r"}`,
		wantFinish: model.FinishReasonSafety, wantCode: model.FinishReasonSafety,
	},
	{
		name:       "safety stop with empty parts and a finish message",
		body:       `{"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "PROHIBITED_CONTENT", "finishMessage": "blocked for policy"}]}`,
		wantFinish: model.FinishReasonProhibitedContent, wantCode: model.FinishReasonProhibitedContent, wantMessage: sdkFinishMessage("blocked for policy"),
	},
	{
		name:       "max tokens with partial text",
		body:       `{"candidates": [{"content": {"role": "model", "parts": [{"text": "Your refund of 12"}]}, "finishReason": "MAX_TOKENS"}]}`,
		wantFinish: model.FinishReasonMaxTokens, wantText: "Your refund of 12",
	},
	{
		name:       "max tokens without text",
		body:       `{"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}]}`,
		wantFinish: model.FinishReasonMaxTokens, wantCode: model.FinishReasonMaxTokens,
	},
	{
		name:       "malformed function call",
		body:       `{"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed function call: print(default_api.get_order(order_id=A-1042"}]}`,
		wantFinish: model.FinishReasonMalformedFunctionCall, wantCode: model.FinishReasonMalformedFunctionCall,
		wantMessage: sdkFinishMessage("Malformed function call: print(default_api.get_order(order_id=A-1042"),
	},
	{
		name:     "blocked prompt",
		body:     `{"promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "The prompt was blocked.", "safetyRatings": []}, "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}`,
		wantCode: model.FinishReasonSafety, wantMessage: "The prompt was blocked.",
	},
	{
		name:     "blocked prompt, other reason",
		body:     `{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}`,
		wantCode: model.FinishReasonProhibitedContent,
	},
	{
		name:     "no candidates and no block reason",
		body:     `{"usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}, "modelVersion": "gemini-2.5-flash"}`,
		wantCode: model.ErrorCodeUnknown, wantMessage: "Unknown error.",
	},
	{
		name:     "empty object",
		body:     `{}`,
		wantCode: model.ErrorCodeUnknown, wantMessage: "Unknown error.",
	},
	{
		name:       "unknown finish reason kept verbatim",
		body:       `{"candidates": [{"finishReason": "SOME_FUTURE_REASON", "finishMessage": "new"}]}`,
		wantFinish: "SOME_FUTURE_REASON", wantCode: "SOME_FUTURE_REASON", wantMessage: sdkFinishMessage("new"),
	},
	{
		name:       "stop without content is not an error code",
		body:       `{"candidates": [{"finishReason": "STOP"}]}`,
		wantFinish: model.FinishReasonStop,
	},
	{
		name:       "thought-only content counts as no content",
		body:       `{"candidates": [{"content": {"role": "model", "parts": [{"text": "thinking...", "thought": true}]}, "finishReason": "RECITATION"}]}`,
		wantFinish: model.FinishReasonRecitation, wantCode: model.FinishReasonRecitation,
	},
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
	if tc.wantText == "" && resp.Content != nil {
		t.Errorf("content = %+v, want nil", resp.Content)
	}
	if !resp.TurnComplete || resp.Partial {
		t.Errorf("turnComplete=%v partial=%v", resp.TurnComplete, resp.Partial)
	}
}

func TestFromGenAICopiesFinishMessage(t *testing.T) {
	r := FromGenAI(&genai.GenerateContentResponse{Candidates: []*genai.Candidate{{FinishReason: genai.FinishReasonSafety, FinishMessage: "why"}}})
	if r.ErrorCode != model.FinishReasonSafety || r.ErrorMessage != "why" || r.FinishReason != model.FinishReasonSafety {
		t.Fatalf("got %+v", r)
	}
	r = FromGenAI(&genai.GenerateContentResponse{Candidates: []*genai.Candidate{{
		FinishReason: genai.FinishReasonMaxTokens, FinishMessage: "why",
		Content: &genai.Content{Parts: []*genai.Part{{Text: "half"}}},
	}}})
	if r.ErrorCode != "" || r.ErrorMessage != "" || r.FinishReason != model.FinishReasonMaxTokens {
		t.Fatalf("with content: %+v", r)
	}
}

func TestFromGenAINil(t *testing.T) {
	r := FromGenAI(nil)
	if r == nil || r.ErrorCode != model.ErrorCodeUnknown {
		t.Fatalf("FromGenAI(nil) = %+v", r)
	}
	r = FromGenAI(&genai.GenerateContentResponse{Candidates: []*genai.Candidate{nil}})
	if r.ErrorCode != model.ErrorCodeUnknown {
		t.Fatalf("nil candidate: %+v", r)
	}
}

// TestSDKPanicBecomesError: genai v1.77 type-asserts parts of the response
// without checking (citationMetadata must be an object; a JSON null body
// makes it write to a nil map). Bad provider data must come back as an
// error, streaming or not.
func TestSDKPanicBecomesError(t *testing.T) {
	for _, body := range []string{`{"candidates": [{"citationMetadata": "x"}]}`, `null`} {
		for _, stream := range []bool{false, true} {
			h := jsonHandler(200, body)
			if stream {
				h = sseHandler(body)
			}
			f := newFake(t, h)
			m := newTestModel(t, f)
			resps, errs := collect(testCtx(t), m, userText("hi"), stream)
			if len(resps) != 0 || len(errs) != 1 {
				t.Fatalf("%s stream=%v: resps=%v errs=%v", body, stream, resps, errs)
			}
			if body != "null" || !stream { // a null SSE event decodes to an empty chunk: "no finish reason" instead
				if !errors.Is(errs[0], ErrSDKPanic) {
					t.Errorf("%s stream=%v: error %v is not ErrSDKPanic", body, stream, errs[0])
				}
			}
		}
	}
}
