package openai

import "testing"

// Regression (found in review of this session's fix, twenty-third session):
// a streamed call opened by a delta without "index" and continued with
// "index": 0 and the same id was split into two calls.
// TestToolCallOpenedWithoutIndexContinuedWithIndexIsOneCall: the delta
// without "index" is given call 0; the dense renumbering kept only the
// server's explicit indices, so the first explicit 0 was read as a new
// server index and given call 1: the arguments went to a second call with
// no name (a phantom call), the real call kept no arguments, and the id
// "call_1" was on both. The answer has one call, get_order(A-1) with id
// call_1.
//
// The second case, found in the same review: indexed continuations that
// carry no id (nor name) also give one call: a first-seen server index with
// neither continues the call the last delta went to, when that call was
// opened without "index".
func TestToolCallOpenedWithoutIndexContinuedWithIndexIsOneCall(t *testing.T) {
	for name, id := range map[string]string{"with id": `"id": "call_1", `, "without id": ""} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, sseHandler(
				chunk(`{"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_order", "arguments": ""}}]}`, "null"),
				chunk(`{"tool_calls": [{"index": 0, `+id+`"function": {"arguments": "{\"order_id\": "}}]}`, "null"),
				chunk(`{"tool_calls": [{"index": 0, "function": {"arguments": "\"A-1\"}"}}]}`, "null"),
				chunk(`{}`, `"tool_calls"`),
				"[DONE]",
			))
			resps, errs := collect(testCtx(t), newTestModel(t, f), userText("where is A-1"), true)
			if len(errs) != 0 || len(resps) == 0 {
				t.Fatalf("responses %d, errors %v", len(resps), errs)
			}
			calls := resps[len(resps)-1].FunctionCalls()
			if len(calls) != 1 || calls[0].Name != "get_order" || calls[0].ID != "call_1" || calls[0].Args["order_id"] != "A-1" {
				for _, c := range calls {
					t.Logf("call %+v", c)
				}
				t.Errorf("%d calls; want only get_order(A-1) with id call_1", len(calls))
			}
		})
	}
}
