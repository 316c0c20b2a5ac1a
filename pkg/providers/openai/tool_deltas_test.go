package openai

import (
	"testing"
)

// TestToolDeltasWithoutIndexOrSteadyID checks the index-less continuations
// toolCallDeltas gives an index: argument chunks with no id, or with an id
// of their own and no name, go to the call opened last, which keeps its
// first id; a call opened after them gets the next index.
func TestToolDeltasWithoutIndexOrSteadyID(t *testing.T) {
	f := newFake(t, sseHandler(
		chunk(`{"role": "assistant", "tool_calls": [{"id": "call_A", "type": "function", "function": {"name": "get_order", "arguments": "{\"order_"}}]}`, "null"),
		chunk(`{"tool_calls": [{"function": {"arguments": "id\": "}}]}`, "null"),
		chunk(`{"tool_calls": [{"id": "chunk_3", "function": {"arguments": "\"A-7\"}"}}]}`, "null"),
		chunk(`{"tool_calls": [{"id": "call_B", "type": "function", "function": {"name": "get_refund", "arguments": "{}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`), "[DONE]",
	))
	resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 0 || len(resps) == 0 {
		t.Fatalf("responses %d, errors %v", len(resps), errs)
	}
	calls := resps[len(resps)-1].FunctionCalls()
	if len(calls) != 2 || calls[0].ID != "call_A" || calls[0].Name != "get_order" || calls[0].Args["order_id"] != "A-7" ||
		calls[1].ID != "call_B" || calls[1].Name != "get_refund" {
		for _, c := range calls {
			t.Logf("call: id %q name %q args %v", c.ID, c.Name, c.Args)
		}
		t.Errorf("index-less continuations: %d calls (logged above), want get_order(A-7) with id call_A, then get_refund with id call_B", len(calls))
	}
}
