package openai

import (
	"testing"
)

// Regression (found in review, twenty-first session): parallel tool calls
// streamed without "index" stay separate calls instead of being merged into
// call 0.
//
// Several OpenAI-compatible servers omit "index" on streamed tool-call
// deltas (Gemini's OpenAI-compatible endpoint, mistral.rs, GLM behind
// gateways, Ollama through LiteLLM). openai-go decodes the missing index
// as 0, so parallel calls are merged into call 0: ids overwritten, names
// concatenated ("get_orderget_refund"), arguments concatenated
// ("{...}{...}"), and the answer becomes MALFORMED_FUNCTION_CALL (or, with
// empty first arguments, one call with a made-up name). The model is asked
// again and answers the same way until the call budget is spent. A delta
// without an index that carries a new id is a new call.
func TestParallelToolCallsWithoutIndex(t *testing.T) {
	for name, events := range map[string][]string{
		"both in one chunk": {
			chunk(`{"role": "assistant", "tool_calls": [
				{"id": "call_A", "type": "function", "function": {"name": "get_order", "arguments": "{\"order_id\": \"A-1\"}"}},
				{"id": "call_B", "type": "function", "function": {"name": "get_refund", "arguments": "{\"refund_id\": \"R-2\"}"}}]}`, "null"),
			chunk(`{}`, `"tool_calls"`), "[DONE]"},
		"one chunk each": {
			chunk(`{"role": "assistant", "tool_calls": [{"id": "call_A", "type": "function", "function": {"name": "get_order", "arguments": "{\"order_id\": \"A-1\"}"}}]}`, "null"),
			chunk(`{"tool_calls": [{"id": "call_B", "type": "function", "function": {"name": "get_refund", "arguments": "{\"refund_id\": \"R-2\"}"}}]}`, "null"),
			chunk(`{}`, `"tool_calls"`), "[DONE]"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, sseHandler(events...))
			resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
			if len(errs) != 0 || len(resps) == 0 {
				t.Fatalf("responses %d, errors %v", len(resps), errs)
			}
			final := resps[len(resps)-1]
			calls := final.FunctionCalls()
			if len(calls) != 2 || calls[0].ID != "call_A" || calls[0].Name != "get_order" || calls[0].Args["order_id"] != "A-1" ||
				calls[1].ID != "call_B" || calls[1].Name != "get_refund" || calls[1].Args["refund_id"] != "R-2" {
				t.Errorf("parallel tool calls without index: finish %s, error code %s (%q), calls %+v; want get_order(A-1) and get_refund(R-2)",
					final.FinishReason, final.ErrorCode, final.ErrorMessage, calls)
			}
		})
	}
}

// Regression (found in review, twenty-first session): a tool name resent
// whole in every chunk is kept once, not concatenated.
//
// Some servers resend the whole function name (and id) in every chunk of a
// tool call (Fireworks, Kimi, MiniMax through NVIDIA NIM). The accumulator
// appends names, so the call is named "get_orderget_orderget_order": the
// loop finds no such tool. openai-node and LiteLLM assign the name; a
// delta whose name equals the name already accumulated for that index is
// the same name, not a continuation.
func TestToolNameResentInEveryChunk(t *testing.T) {
	f := newFake(t, sseHandler(
		chunk(`{"role": "assistant", "tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "get_order", "arguments": "{\"order_"}}]}`, "null"),
		chunk(`{"tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "get_order", "arguments": "id\": "}}]}`, "null"),
		chunk(`{"tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "get_order", "arguments": "\"A-7\"}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`), "[DONE]",
	))
	resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 0 || len(resps) == 0 {
		t.Fatalf("responses %d, errors %v", len(resps), errs)
	}
	calls := resps[len(resps)-1].FunctionCalls()
	if len(calls) != 1 || calls[0].Name != "get_order" || calls[0].ID != "call_A" || calls[0].Args["order_id"] != "A-7" {
		for _, c := range calls {
			t.Logf("call: id %q name %q args %v", c.ID, c.Name, c.Args)
		}
		t.Errorf("tool call with its name in every chunk: %d calls (logged above), want one get_order(order_id A-7) with id call_A", len(calls))
	}
}
