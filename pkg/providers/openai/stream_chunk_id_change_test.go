package openai

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): a stream
// whose chunks do not all carry the same id (proxies and gateways that
// stamp every chunk with an id of their own, or send the usage chunk, or
// some chunks, without one) failed after its first chunk as a "malformed
// stream": the SDK's ChatCompletionAccumulator rejects a chunk whose id
// differs from the first chunk's, and the adapter reported that as "chunk 2
// rejected by the accumulator (bad choice or tool-call index)", classified
// UNKNOWN: a healthy answer lost, with a text that sent whoever read it to
// look at indices. TestStreamChunkIDChangeAccepted: the id says nothing
// about the answer; the stream is accepted, and the response carries the
// first id the stream gave (partials and final alike).
func TestStreamChunkIDChangeAccepted(t *testing.T) {
	withID := func(id, rest string) string {
		return `{"id": "` + id + `", "object": "chat.completion.chunk", "created": 1700000000, "model": "m-1", ` + rest + `}`
	}
	f := newFake(t, sseHandler(
		withID("px-1", `"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": null}]`),
		withID("px-2", `"choices": [{"index": 0, "delta": {"content": "lo."}, "finish_reason": null}]`),
		withID("", `"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":"}}]}, "finish_reason": null}]`),
		withID("px-4", `"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"x\"}"}}]}, "finish_reason": null}]`),
		withID("px-5", `"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]`),
		withID("px-6", `"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}`),
		"[DONE]",
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	final := resps[len(resps)-1]
	if final.Partial || !final.TurnComplete || final.Content.Text() != "Hello." || final.FinishReason != model.FinishReasonStop || final.ErrorCode != "" {
		t.Fatalf("final = %+v", final)
	}
	calls := final.Content.FunctionCalls()
	if len(calls) != 1 || calls[0].ID != "call_1" || calls[0].Name != "lookup" || calls[0].Args["q"] != "x" {
		t.Errorf("calls = %+v", calls)
	}
	if final.Usage == nil || final.Usage.TotalTokens != 9 {
		t.Errorf("usage = %+v", final.Usage)
	}
	for i, r := range resps {
		if r.ProviderRequestID != "px-1" {
			t.Errorf("response %d ProviderRequestID = %q, want the stream's first id px-1", i, r.ProviderRequestID)
		}
	}
}
