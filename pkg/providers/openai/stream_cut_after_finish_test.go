package openai

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (left open in the nineteenth session, fixed in the
// twentieth): a stream cut after its finish chunk but before the usage
// chunk (stream_options.include_usage puts usage in a chunk of its own,
// after the finish; a proxy or load balancer that drops the connection
// there) was TRANSPORT, although the answer was whole: the text had been
// shown, so the call could not be retried, and the invocation was
// dead-lettered and its model call made again on replay. A choice with a
// finish reason is complete: the answer is returned without usage. A cut
// before the finish is still an error (TestStreamAbortedAfterOutput).
func TestStreamCutAfterFinishKeepsTheWholeAnswer(t *testing.T) {
	for name, events := range map[string][]string{
		"text": {chunk(`{"role": "assistant", "content": "Your refund "}`, "null"), chunk(`{"content": "is booked."}`, "null"), chunk(`{}`, `"stop"`)},
		"tool call": {
			chunk(`{"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_order", "arguments": ""}}]}`, "null"),
			chunk(`{"tool_calls": [{"index": 0, "function": {"arguments": "{\"order_id\": \"A-1001\"}"}}]}`, "null"),
			chunk(`{}`, `"tool_calls"`)},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, abortHandler(events...))
			m := newTestModel(t, f)
			resps, errs := collect(testCtx(t), m, userText("hi"), true)
			if len(errs) != 0 {
				t.Fatalf("a stream cut after its finish chunk: errors %v, want the whole answer", errs)
			}
			if len(resps) == 0 {
				t.Fatal("no response")
			}
			final := resps[len(resps)-1]
			if final.Partial || !final.TurnComplete || final.ErrorCode != "" {
				t.Fatalf("final = %+v, want a complete turn", final)
			}
			switch name {
			case "text":
				if final.Content.Text() != "Your refund is booked." || final.FinishReason != model.FinishReasonStop {
					t.Errorf("final text %q finish %q", final.Content.Text(), final.FinishReason)
				}
			case "tool call":
				calls := final.Content.FunctionCalls()
				if len(calls) != 1 || calls[0].Name != "get_order" || calls[0].Args["order_id"] != "A-1001" {
					t.Errorf("final calls = %+v", calls)
				}
			}
			if f.count() != 1 {
				t.Errorf("requests = %d, want 1", f.count())
			}
		})
	}
}
