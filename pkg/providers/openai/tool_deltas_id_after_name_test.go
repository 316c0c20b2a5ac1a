package openai

import (
	"testing"
)

// Regression (found in review, twenty-first session): an index-less
// call whose id follows its name keeps the id.
// TestIndexlessIDAfterName: a server that omits "index" and sends a
// call's id in a later chunk than its name (first delta: name only; second:
// id and arguments) had the id kept before toolCallDeltas (every delta
// decoded as index 0 and the accumulator assigns the id). Now the second
// delta is read as a continuation carrying "a new id but no name", and its
// id is dropped ("a continuation keeps its call's first id"), although the
// call has no id at all yet: the function call comes back with ID "", and
// the tool result sent back next turn has no tool_call_id to match.
func TestIndexlessIDAfterName(t *testing.T) {
	f := newFake(t, sseHandler(
		chunk(`{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_order", "arguments": ""}}]}`, "null"),
		chunk(`{"tool_calls": [{"id": "call_A", "function": {"arguments": "{\"order_id\": \"A-7\"}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`), "[DONE]",
	))
	resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
	if len(errs) != 0 || len(resps) == 0 {
		t.Fatalf("responses %d, errors %v", len(resps), errs)
	}
	calls := resps[len(resps)-1].FunctionCalls()
	if len(calls) != 1 || calls[0].ID != "call_A" || calls[0].Name != "get_order" || calls[0].Args["order_id"] != "A-7" {
		for _, c := range calls {
			t.Logf("call: id %q name %q args %v", c.ID, c.Name, c.Args)
		}
		t.Errorf("index-less call whose id follows its name: %d calls (logged above), want one get_order(A-7) with id call_A", len(calls))
	}
}
