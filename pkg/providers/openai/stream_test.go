package openai

import (
	"errors"
	"io"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

func chunk(delta, finish string) string {
	return `{"id": "chatcmpl-s1", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4.1-mini-2025-04-14",
	  "choices": [{"index": 0, "delta": ` + delta + `, "logprobs": null, "finish_reason": ` + finish + `}]}`
}

const usageChunk = `{"id": "chatcmpl-s1", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4.1-mini-2025-04-14",
  "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}}`

func TestStreamText(t *testing.T) {
	f := newFake(t, sseHandler(
		chunk(`{"role": "assistant", "content": ""}`, "null"),
		chunk(`{"content": "Hel"}`, "null"),
		chunk(`{"content": "lo."}`, "null"),
		chunk(`{}`, `"stop"`),
		usageChunk,
		"[DONE]",
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(resps) != 3 {
		t.Fatalf("responses = %d, want 2 partials + final", len(resps))
	}
	for i, want := range []string{"Hel", "lo."} {
		if !resps[i].Partial || resps[i].Content.Text() != want || resps[i].ProviderRequestID != "chatcmpl-s1" {
			t.Errorf("partial %d = %+v", i, resps[i])
		}
	}
	final := resps[2]
	if final.Partial || !final.TurnComplete || final.Content.Text() != "Hello." || final.FinishReason != model.FinishReasonStop || final.ErrorCode != "" {
		t.Errorf("final = %+v", final)
	}
	if final.Usage == nil || final.Usage.TotalTokens != 9 || final.ProviderRequestID != "chatcmpl-s1" || final.ModelVersion != "gpt-4.1-mini-2025-04-14" {
		t.Errorf("final metadata = %+v usage %+v", final, final.Usage)
	}
	body := bodyMap(t, f.last(t))
	if body["stream"] != true || dig(t, body, "stream_options", "include_usage") != true {
		t.Errorf("stream body = %v", body)
	}
	if f.count() != 1 {
		t.Errorf("requests = %d", f.count())
	}
}

func TestStreamUsageOptionDisabled(t *testing.T) {
	f := newFake(t, sseHandler(chunk(`{"content": "x"}`, `"stop"`), "[DONE]"))
	m := newTestModel(t, f, func(c *Config) { c.DisableStreamUsage = true })
	if _, errs := collect(testCtx(t), m, userText("hi"), true); len(errs) != 0 {
		t.Fatal(errs)
	}
	if _, has := bodyMap(t, f.last(t))["stream_options"]; has {
		t.Error("stream_options sent although disabled")
	}
}

func TestStreamToolCalls(t *testing.T) {
	f := newFake(t, sseHandler(
		chunk(`{"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "get_order", "arguments": ""}}]}`, "null"),
		chunk(`{"tool_calls": [{"index": 0, "function": {"arguments": "{\"order_"}}]}`, "null"),
		chunk(`{"tool_calls": [{"index": 0, "function": {"arguments": "id\":\"A-7\"}"}}]}`, "null"),
		chunk(`{"tool_calls": [{"index": 1, "id": "call_B", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
		"[DONE]",
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 0 || len(resps) != 1 {
		t.Fatalf("resps=%d errs=%v", len(resps), errs)
	}
	calls := resps[0].FunctionCalls()
	if len(calls) != 2 || calls[0].ID != "call_A" || calls[0].Name != "get_order" || calls[0].Args["order_id"] != "A-7" || calls[1].ID != "call_B" {
		t.Fatalf("calls = %+v", calls)
	}
	if resps[0].FinishReason != model.FinishReasonStop {
		t.Errorf("finish = %q", resps[0].FinishReason)
	}
}

func TestStreamInBand(t *testing.T) {
	cases := []struct {
		tc     inBandCase
		events []string
	}{
		{inBandCase{name: "length after text", wantFinish: model.FinishReasonMaxTokens, wantText: "Your refund of 12"},
			[]string{chunk(`{"content": "Your refund "}`, "null"), chunk(`{"content": "of 12"}`, `"length"`), "[DONE]"}},
		{inBandCase{name: "content filter without text", wantFinish: model.FinishReasonSafety, wantCode: model.FinishReasonSafety, wantMessage: "content_filter"},
			[]string{chunk(`{"role": "assistant"}`, "null"), chunk(`{}`, `"content_filter"`), "[DONE]"}},
		{inBandCase{name: "malformed streamed arguments", wantFinish: model.FinishReasonMalformedFunctionCall, wantCode: model.FinishReasonMalformedFunctionCall, wantMessage: `{"order_id": `},
			[]string{chunk(`{"tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "get_order", "arguments": "{\"order_id\": "}}]}`, "null"),
				chunk(`{}`, `"tool_calls"`), "[DONE]"}},
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
	f := newFake(t, abortHandler(chunk(`{"content": "Refunding"}`, "null"), chunk(`{"content": " order"}`, "null")))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(resps) != 2 || !resps[0].Partial || !resps[1].Partial {
		t.Fatalf("want the 2 partials before the drop, got %+v", resps)
	}
	if len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	if !errors.Is(errs[0], io.ErrUnexpectedEOF) {
		t.Errorf("error does not wrap io.ErrUnexpectedEOF: %v", errs[0])
	}
	if f.count() != 1 {
		t.Errorf("requests = %d", f.count())
	}
}

func TestStreamErrorEventMidway(t *testing.T) {
	f := newFake(t, sseHandler(
		chunk(`{"content": "Partial"}`, "null"),
		`{"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": "server_error"}}`,
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(resps) != 1 || resps[0].Content.Text() != "Partial" || len(errs) != 1 {
		t.Fatalf("resps=%+v errs=%v", resps, errs)
	}
	var pe *model.ProviderError
	if !errors.As(errs[0], &pe) || pe.Provider != ProviderName || pe.Code != "server_error" || pe.Status != "server_error" || pe.StatusCode != 500 {
		// The event is the stream form of a 500 (SERVER); after output no
		// layer retries it all the same.
		t.Fatalf("error = %v (%+v)", errs[0], pe)
	}
	var se *ssestream.StreamError
	if !errors.As(errs[0], &se) {
		t.Errorf("SDK stream error not reachable: %v", errs[0])
	}
	var apiErr *openai.Error
	if errors.As(errs[0], &apiErr) {
		t.Errorf("a mid-stream event is not an HTTP error")
	}
}

func TestStreamEndsWithoutFinish(t *testing.T) {
	for name, events := range map[string][]string{
		"after text, no DONE": {chunk(`{"content": "half"}`, "null")},
		"DONE but no finish":  {chunk(`{"content": "half"}`, "null"), "[DONE]"},
		"empty":               nil,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, sseHandler(events...))
			m := newTestModel(t, f)
			_, errs := collect(testCtx(t), m, userText("hi"), true)
			if len(errs) != 1 || !errors.Is(errs[0], io.ErrUnexpectedEOF) {
				t.Fatalf("errs = %v", errs)
			}
			if f.count() != 1 {
				t.Errorf("requests = %d", f.count())
			}
		})
	}
}

func TestStreamConsumerStopsEarly(t *testing.T) {
	f := newFake(t, sseHandler(chunk(`{"content": "a"}`, "null"), chunk(`{"content": "b"}`, `"stop"`), "[DONE]"))
	m := newTestModel(t, f)
	n := 0
	for r, err := range m.GenerateContent(testCtx(t), userText("hi"), true) {
		if err != nil || !r.Partial {
			t.Fatalf("first: %+v %v", r, err)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatal(n)
	}
}

func TestStreamBadChoiceIndex(t *testing.T) {
	bad := `{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 100000, "delta": {"content": "x"}, "finish_reason": null}]}`
	f := newFake(t, sseHandler(bad, chunk(`{}`, `"stop"`), "[DONE]"))
	m := newTestModel(t, f)
	_, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 1 || !errors.Is(errs[0], errBadStream) {
		t.Fatalf("errs = %v", errs)
	}
}
