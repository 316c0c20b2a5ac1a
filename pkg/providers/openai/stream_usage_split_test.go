package openai

import (
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): an
// OpenAI-compatible server that splits usage over chunks (prompt tokens on
// an early chunk, completion tokens on the last, as gateways translating
// Anthropic's message_start / message_delta usage send it) was reported by
// its last chunk only: the twenty-third session's fix against summed
// running totals kept the last usage object whole, so the prompt tokens
// were lost (0) and the total was the completion's alone.
// TestStreamUsageSplitOverChunks: each field of the call's usage is the
// latest non-zero value of that field (a running total is still never
// summed, TestStreamUsageIsLastRunningTotalNotSum), and a total below
// prompt plus completion tokens, which mixing chunks can give, is raised to
// their sum.
func TestStreamUsageSplitOverChunks(t *testing.T) {
	const head = `"id": "gw-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "claude-sonnet-4"`
	for _, tc := range []struct {
		name          string
		first, second string
	}{
		{
			name:   "no totals",
			first:  `{"prompt_tokens": 120}`,
			second: `{"completion_tokens": 30}`,
		},
		{
			name:   "each chunk's own total",
			first:  `{"prompt_tokens": 120, "completion_tokens": 0, "total_tokens": 120}`,
			second: `{"prompt_tokens": 0, "completion_tokens": 30, "total_tokens": 30}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sseHandler(
				`{`+head+`, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": null}], "usage": `+tc.first+`}`,
				`{`+head+`, "choices": [{"index": 0, "delta": {"content": "lo."}, "finish_reason": null}], "usage": null}`,
				`{`+head+`, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": `+tc.second+`}`,
				"[DONE]",
			))
			m := newTestModel(t, f)
			resps, errs := collect(testCtx(t), m, userText("hi"), true)
			if len(errs) != 0 {
				t.Fatalf("errors: %v", errs)
			}
			final := resps[len(resps)-1]
			if final.Partial || final.Content.Text() != "Hello." {
				t.Fatalf("final = %+v", final)
			}
			want := &model.Usage{PromptTokens: 120, CandidatesTokens: 30, TotalTokens: 150}
			if !reflect.DeepEqual(final.Usage, want) {
				t.Errorf("usage = %+v, want %+v (prompt tokens from the first chunk, completion tokens from the last)", final.Usage, want)
			}
		})
	}
}
