package openai

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// A tool call cut off by the output-token limit: OpenAI answers
// finish_reason "length" and the arguments end mid-JSON. The provider said
// why it stopped (MAX_TOKENS): per the seed ("finish reason first";
// "a truncated tool argument ... finish reason MAX_TOKENS ... afterModel
// records TRUNCATED") the response is TRUNCATED, not a tool-protocol break
// that the loop answers by asking the model again under the same limit.
func TestTruncatedToolCallIsTruncated(t *testing.T) {
	const cut = `{"order_id": "A-1042", "reason": "The customer reported that the`
	msg := `{"role": "assistant", "content": null, "tool_calls": [
	    {"id": "call_1", "type": "function", "function": {"name": "refund_order", "arguments": ` + reviewJSONString(cut) + `}}]}`

	t.Run("non-streaming", func(t *testing.T) {
		f := newFake(t, jsonHandler(200, completion(msg, `"length"`)))
		resp, err := one(t, newTestModel(t, f), userText("refund"))
		if err != nil {
			t.Fatal(err)
		}
		reviewCheckTruncated(t, resp)
	})
	t.Run("streaming", func(t *testing.T) {
		f := newFake(t, sseHandler(
			chunk(`{"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "refund_order", "arguments": ""}}]}`, "null"),
			chunk(`{"tool_calls": [{"index": 0, "function": {"arguments": `+reviewJSONString(cut)+`}}]}`, "null"),
			chunk(`{}`, `"length"`),
			"[DONE]",
		))
		resps, errs := collect(testCtx(t), newTestModel(t, f), userText("refund"), true)
		if len(errs) != 0 || len(resps) == 0 {
			t.Fatalf("resps=%d errs=%v", len(resps), errs)
		}
		reviewCheckTruncated(t, resps[len(resps)-1])
	})
}

func reviewCheckTruncated(t *testing.T, resp *model.Response) {
	t.Helper()
	if resp.FinishReason != model.FinishReasonMaxTokens {
		t.Errorf("finish reason %q, want MAX_TOKENS (the provider said \"length\")", resp.FinishReason)
	}
	if c, failed := taxonomy.ClassifyResponse(resp); !failed || c != taxonomy.Truncated {
		t.Errorf("class %s (failed=%v), want TRUNCATED", c, failed)
	}
}

func reviewJSONString(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		if r == '"' || r == '\\' {
			b = append(b, '\\')
		}
		b = append(b, string(r)...)
	}
	return string(append(b, '"'))
}
