package openai

import (
	"testing"
)

// Regression (found in review, twenty-third session): streamed tool calls
// numbered from 1 gave an extra call with no id, no name and no arguments.
// TestStreamedToolCallIndexFromOneAddsNoPhantomCall: some
// OpenAI-compatible servers number streamed tool calls from 1, or with a
// gap (a gateway in front of Anthropic or Bedrock that uses the content
// block's index, where block 0 is the text: CLIProxyAPI, the Bedrock
// access gateway, LiteLLM's Anthropic mapping before its fix). The SDK's
// accumulator fills the gap with an empty placeholder call, and the
// adapter turned it into a function call with no id, no name and no
// arguments: the loop answers an unknown tool "" beside the real call
// (an unknown_tool error map, a metric, a warning), and the assistant turn
// sent back holds a tool call with an empty name, which the model never
// made and a strict server may refuse. The answer has one call,
// get_order(A-1).
func TestStreamedToolCallIndexFromOneAddsNoPhantomCall(t *testing.T) {
	f := newFake(t, sseHandler(
		chunk(`{"role": "assistant", "content": "Checking."}`, "null"),
		chunk(`{"tool_calls": [{"index": 1, "id": "toolu_01A", "type": "function", "function": {"name": "get_order", "arguments": ""}}]}`, "null"),
		chunk(`{"tool_calls": [{"index": 1, "function": {"arguments": "{\"order_id\": \"A-1\"}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
		"[DONE]",
	))
	resps, errs := collect(testCtx(t), newTestModel(t, f), userText("where is A-1"), true)
	if len(errs) != 0 || len(resps) == 0 {
		t.Fatalf("responses %d, errors %v", len(resps), errs)
	}
	final := resps[len(resps)-1]
	calls := final.FunctionCalls()
	for _, c := range calls {
		if c.Name == "" {
			t.Errorf("a function call with no name (a placeholder for the index gap): %+v", c)
		}
	}
	if len(calls) != 1 || calls[0].Name != "get_order" || calls[0].ID != "toolu_01A" || calls[0].Args["order_id"] != "A-1" {
		t.Errorf("calls %+v (finish %s, error code %s); want only get_order(A-1)", calls, final.FinishReason, final.ErrorCode)
	}
}

// TestStreamedToolCallIndexGapsKeepCallsPaired: parallel calls numbered
// with gaps (1 and 3, the gateway's content block indices) and interleaved
// deltas become two calls, each with its own id, name and arguments, in
// the order their indices first appeared.
func TestStreamedToolCallIndexGapsKeepCallsPaired(t *testing.T) {
	f := newFake(t, sseHandler(
		chunk(`{"tool_calls": [{"index": 1, "id": "toolu_A", "type": "function", "function": {"name": "get_order", "arguments": ""}}]}`, "null"),
		chunk(`{"tool_calls": [{"index": 3, "id": "toolu_B", "type": "function", "function": {"name": "get_user", "arguments": "{\"user"}}]}`, "null"),
		chunk(`{"tool_calls": [{"index": 1, "function": {"arguments": "{\"order_id\": \"A-1\"}"}}]}`, "null"),
		chunk(`{"tool_calls": [{"index": 3, "function": {"arguments": "_id\": \"u-7\"}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
		"[DONE]",
	))
	resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 0 || len(resps) == 0 {
		t.Fatalf("responses %d, errors %v", len(resps), errs)
	}
	calls := resps[len(resps)-1].FunctionCalls()
	if len(calls) != 2 ||
		calls[0].ID != "toolu_A" || calls[0].Name != "get_order" || calls[0].Args["order_id"] != "A-1" ||
		calls[1].ID != "toolu_B" || calls[1].Name != "get_user" || calls[1].Args["user_id"] != "u-7" {
		for _, c := range calls {
			t.Logf("call %+v", c)
		}
		t.Errorf("%d calls; want get_order(A-1) then get_user(u-7), each with its id", len(calls))
	}
}
