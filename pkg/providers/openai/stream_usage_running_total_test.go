package openai

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, twenty-third session): a stream whose every
// chunk carried a running usage total was recorded with the sum of those
// totals. TestStreamUsageIsLastRunningTotalNotSum: several OpenAI-compatible
// servers put a running (cumulative) usage object on every streamed chunk
// instead of only on a last usage chunk: Gemini's OpenAI-compatible
// endpoint (which this adapter names as a supported server), and others
// (Together, DeepSeek, SiliconFlow). Each usage object is the total so far,
// so the call's usage is the last one. The adapter took the usage of the
// SDK's ChatCompletionAccumulator, which adds every chunk's usage up, so a
// three-chunk answer of 5 prompt and 3 output tokens was recorded as 15
// prompt and 6 output tokens (21 in all): the session's token accounting
// inflated by the number of chunks.
func TestStreamUsageIsLastRunningTotalNotSum(t *testing.T) {
	// The shape of Gemini's OpenAI-compatible stream: usage on every chunk,
	// the finish reason on the last.
	geminiChunk := func(content, finish string, completion, total int) string {
		return `{"choices": [{"delta": {"content": "` + content + `", "role": "assistant"}, "finish_reason": ` + finish + `, "index": 0}],
		  "created": 1700000000, "id": "gm-1", "model": "gemini-2.5-flash", "object": "chat.completion.chunk",
		  "usage": {"completion_tokens": ` + strconv.Itoa(completion) + `, "prompt_tokens": 5, "total_tokens": ` + strconv.Itoa(total) + `}}`
	}
	f := newFake(t, sseHandler(
		geminiChunk("Hel", "null", 1, 6),
		geminiChunk("lo", "null", 2, 7),
		geminiChunk(".", `"stop"`, 3, 8),
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
	want := &model.Usage{PromptTokens: 5, CandidatesTokens: 3, TotalTokens: 8}
	if !reflect.DeepEqual(final.Usage, want) {
		t.Errorf("usage = %+v, want %+v (the last chunk's running total, not the sum of every chunk's)", final.Usage, want)
	}
}
