package openai

import (
	"testing"
)

func idChunk(id, rest string) string {
	return `{"id": "` + id + `", "object": "chat.completion.chunk", "created": 1700000000, "model": "m-1", ` + rest + `}`
}

func idText(id, s string) string {
	return idChunk(id, `"choices": [{"index": 0, "delta": {"content": "`+s+`"}, "finish_reason": null}]`)
}

// Regression (found in review of this session's fix, twenty-fourth session):
// a per-chunk-id proxy whose first chunk holds no choice (Azure's
// prompt_filter_results chunk, or a role/keep-alive chunk, stamped by the
// proxy with an id of its own) passed before 59f38b5 (the first chunk's id
// was given to all) and is now refused: chunkIDs skips the no-choice first
// chunk without taking its id as the stream's first, but the accumulator
// already took it.
func TestPerChunkIDsWithAFirstChunkWithoutChoice(t *testing.T) {
	f := newFake(t, sseHandler(
		idChunk("px-1", `"choices": [], "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]`),
		idText("px-2", "Hel"),
		idText("px-3", "lo."),
		idChunk("px-4", `"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]`),
		"[DONE]",
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 0 {
		t.Fatalf("per-chunk-id stream whose first chunk has no choice refused: %v", errs)
	}
	if got := resps[len(resps)-1].Content.Text(); got != "Hello." {
		t.Fatalf("text = %q", got)
	}
}

// Regression (found in review of this session's fix, twenty-fourth session):
// a gateway that fails over after the first content chunk and restarts
// the answer under a new id: [A, B, B, stop B]. B repeats, so it is a
// completion's id, not a per-chunk id; A is another completion. chunkIDs
// rewrites B to A (new id, nothing repeated yet; then B == previous), so
// the two generations are glued into one finished answer.
func TestRestartAfterOneChunkIsRefused(t *testing.T) {
	f := newFake(t, sseHandler(
		idText("chatcmpl-A", "Your refund of $12.99 is "),
		idText("chatcmpl-B", "I could not find "),
		idText("chatcmpl-B", "order A-1042."),
		idChunk("chatcmpl-B", `"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]`),
		"[DONE]",
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("refund A-1042"), true)
	if len(errs) == 0 {
		final := resps[len(resps)-1]
		t.Errorf("restart after one chunk accepted as one finished answer: %q (TurnComplete=%v), want an error",
			final.Content.Text(), final.TurnComplete)
	}
}

// Legitimate OpenAI: one id on every chunk, a usage chunk (no choices)
// with a different id at the end. Must pass.
func TestOneIDStreamWithAUsageChunkOfItsOwn(t *testing.T) {
	f := newFake(t, sseHandler(
		idChunk("chatcmpl-X", `"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]`),
		idText("chatcmpl-X", "Hel"),
		idText("chatcmpl-X", "lo."),
		idChunk("chatcmpl-X", `"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]`),
		idChunk("other", `"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}`),
		"[DONE]",
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 0 {
		t.Fatalf("legit stream refused: %v", errs)
	}
	if got := resps[len(resps)-1].Content.Text(); got != "Hello." {
		t.Fatalf("text = %q", got)
	}
}
