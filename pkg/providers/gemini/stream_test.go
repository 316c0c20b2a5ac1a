package gemini

import (
	"errors"
	"io"
	"testing"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

func chunkText(text string) string {
	return `{"candidates": [{"content": {"role": "model", "parts": [{"text": ` + quote(text) + `}]}, "index": 0}], "modelVersion": "gemini-2.5-flash-001", "responseId": "sse-1"}`
}

func quote(s string) string { return `"` + s + `"` }

func TestStreamText(t *testing.T) {
	f := newFake(t, sseHandler(
		chunkText("Hel"),
		chunkText("lo, "),
		`{"candidates": [{"content": {"role": "model", "parts": [{"text": "world."}]}, "finishReason": "STOP", "index": 0}],
		  "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 3, "totalTokenCount": 7}, "modelVersion": "gemini-2.5-flash-001", "responseId": "sse-1"}`,
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(resps) != 4 {
		t.Fatalf("responses = %d, want 3 partials + final", len(resps))
	}
	for i, want := range []string{"Hel", "lo, ", "world."} {
		if !resps[i].Partial || resps[i].Content.Text() != want {
			t.Errorf("partial %d = %+v (%q)", i, resps[i], resps[i].Content.Text())
		}
	}
	final := resps[3]
	if final.Partial || !final.TurnComplete || final.Content.Text() != "Hello, world." {
		t.Errorf("final = %+v text %q", final, final.Content.Text())
	}
	if final.FinishReason != model.FinishReasonStop || final.ErrorCode != "" {
		t.Errorf("final finish=%q code=%q", final.FinishReason, final.ErrorCode)
	}
	if final.Usage == nil || final.Usage.TotalTokens != 7 || final.ProviderRequestID != "sse-1" || final.ModelVersion != "gemini-2.5-flash-001" {
		t.Errorf("final metadata: usage=%+v id=%q version=%q", final.Usage, final.ProviderRequestID, final.ModelVersion)
	}
	rec := f.last(t)
	if rec.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || rec.RawQuery != "alt=sse" {
		t.Errorf("request = %s?%s", rec.Path, rec.RawQuery)
	}
	if f.count() != 1 {
		t.Errorf("requests = %d", f.count())
	}
}

func TestStreamFunctionCall(t *testing.T) {
	f := newFake(t, sseHandler(
		chunkText("Looking it up."),
		`{"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"id": "fc-9", "name": "get_order", "args": {"order_id": "A-7"}}}]}, "finishReason": "STOP"}]}`,
		// A trailing usage-only chunk must not turn the final into "Unknown error.".
		`{"usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 5, "totalTokenCount": 9}}`,
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	final := resps[len(resps)-1]
	calls := final.FunctionCalls()
	if len(calls) != 1 || calls[0].ID != "fc-9" || calls[0].Name != "get_order" || calls[0].Args["order_id"] != "A-7" {
		t.Fatalf("calls = %+v", calls)
	}
	if final.Content.Parts[0].Text != "Looking it up." {
		t.Errorf("text part lost: %+v", final.Content.Parts)
	}
	if final.ErrorCode != "" || final.FinishReason != model.FinishReasonStop || final.Usage == nil || final.Usage.TotalTokens != 9 {
		t.Errorf("final = %+v usage %+v", final, final.Usage)
	}
}

func TestStreamInBand(t *testing.T) {
	cases := []struct {
		tc     inBandCase
		events []string
	}{
		{inBandCase{name: "max tokens after text", wantFinish: model.FinishReasonMaxTokens, wantText: "Your refund of 12"},
			[]string{chunkText("Your refund "), `{"candidates": [{"content": {"role": "model", "parts": [{"text": "of 12"}]}, "finishReason": "MAX_TOKENS"}]}`}},
		{inBandCase{name: "max tokens on a final chunk without parts", wantFinish: model.FinishReasonMaxTokens, wantText: "Your refund"},
			[]string{chunkText("Your refund"), `{"candidates": [{"finishReason": "MAX_TOKENS"}]}`}},
		{inBandCase{name: "safety with no content", wantFinish: model.FinishReasonSafety, wantCode: model.FinishReasonSafety},
			[]string{`{"candidates": [{"finishReason": "SAFETY"}]}`}},
		{inBandCase{name: "blocked prompt", wantCode: "PROHIBITED_CONTENT", wantMessage: "blocked"},
			[]string{`{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "blocked"}}`}},
	}
	for _, c := range cases {
		t.Run(c.tc.name, func(t *testing.T) {
			f := newFake(t, sseHandler(c.events...))
			m := newTestModel(t, f)
			resps, errs := collect(testCtx(t), m, userText("hi"), true)
			if len(errs) != 0 {
				t.Fatalf("errors: %v", errs)
			}
			checkInBand(t, resps[len(resps)-1], c.tc)
		})
	}
}

func TestStreamDropsMidway(t *testing.T) {
	f := newFake(t, abortHandler(chunkText("Refunding"), chunkText(" order")))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(resps) != 2 || !resps[0].Partial || !resps[1].Partial {
		t.Fatalf("want the 2 partials before the drop, got %d: %+v", len(resps), resps)
	}
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want exactly one", errs)
	}
	if !errors.Is(errs[0], io.ErrUnexpectedEOF) {
		t.Errorf("error does not wrap io.ErrUnexpectedEOF: %v", errs[0])
	}
	if f.count() != 1 {
		t.Errorf("requests = %d, want 1 (no automatic continuation)", f.count())
	}
}

func TestStreamErrorEventMidway(t *testing.T) {
	f := newFake(t, sseHandler(chunkText("Partial"), `{"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}}`))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(resps) != 1 || !resps[0].Partial || resps[0].Content.Text() != "Partial" {
		t.Fatalf("responses = %+v", resps)
	}
	if len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	var apiErr genai.APIError
	if !errors.As(errs[0], &apiErr) || apiErr.Code != 500 || apiErr.Status != "INTERNAL" {
		t.Errorf("error = %v, want genai.APIError 500 INTERNAL", errs[0])
	}
	if f.count() != 1 {
		t.Errorf("requests = %d", f.count())
	}
}

// TestStreamEndsWithoutFinish: a stream that closes cleanly before the final
// chunk is incomplete. It is reported as an error, and (continuation off)
// the SDK does not reconnect.
func TestStreamEndsWithoutFinish(t *testing.T) {
	for name, events := range map[string][]string{
		"after text": {chunkText("half an ans")},
		"empty":      nil,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, sseHandler(events...))
			m := newTestModel(t, f)
			resps, errs := collect(testCtx(t), m, userText("hi"), true)
			if len(resps) != len(events) || len(errs) != 1 || !errors.Is(errs[0], io.ErrUnexpectedEOF) {
				t.Fatalf("resps=%d errs=%v", len(resps), errs)
			}
			if f.count() != 1 {
				t.Errorf("requests = %d, want 1", f.count())
			}
		})
	}
}

func TestStreamConsumerStopsEarly(t *testing.T) {
	f := newFake(t, sseHandler(chunkText("a"), chunkText("b"), `{"candidates": [{"finishReason": "STOP"}]}`))
	m := newTestModel(t, f)
	n := 0
	for r, err := range m.GenerateContent(testCtx(t), userText("hi"), true) {
		if err != nil || !r.Partial {
			t.Fatalf("first item: %+v %v", r, err)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatalf("n = %d", n)
	}
}

func TestStreamConsumerPanicIsNotSwallowed(t *testing.T) {
	f := newFake(t, sseHandler(chunkText("a"), `{"candidates": [{"finishReason": "STOP"}]}`))
	m := newTestModel(t, f)
	defer func() {
		if r := recover(); r != "consumer bug" {
			t.Fatalf("recover() = %v, want the consumer's panic", r)
		}
	}()
	for range m.GenerateContent(testCtx(t), userText("hi"), true) {
		panic("consumer bug")
	}
}

// TestNoAutomaticContinuation: genai v1.77 chains extra requests when a
// candidate carries a continuation token (and, streaming, reconnects). The
// adapter turns that off: one call, one request.
func TestNoAutomaticContinuation(t *testing.T) {
	const withToken = `{"candidates": [{"content": {"role": "model", "parts": [{"text": "part one"}]}, "continuationToken": "dG9rZW4tMQ=="}]}`
	t.Run("unary", func(t *testing.T) {
		f := newFake(t, jsonHandler(200, withToken))
		resp, err := one(t, newTestModel(t, f), userText("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Content.Text() != "part one" || f.count() != 1 {
			t.Errorf("text %q, requests %d (want 1)", resp.Content.Text(), f.count())
		}
	})
	t.Run("stream", func(t *testing.T) {
		f := newFake(t, sseHandler(withToken))
		_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
		if len(errs) != 1 || !errors.Is(errs[0], io.ErrUnexpectedEOF) {
			t.Errorf("errs = %v", errs)
		}
		if f.count() != 1 {
			t.Errorf("requests = %d, want 1", f.count())
		}
	})
}
