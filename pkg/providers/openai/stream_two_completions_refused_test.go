package openai

import (
	"testing"
)

// Regression (found in review, twenty-fourth session): every chunk now gets the
// stream's first id, so the accumulator's only check that all chunks
// belong to one completion is gone. A gateway that fails over to another
// backend mid-stream and starts the answer again under a new id (or a
// broken proxy that interleaves two completions on one response) is now
// accepted as one healthy, finished answer whose text is the two
// generations glued together. Before the commit the id change was refused
// ("malformed stream", an error the loop retries); per-chunk ids of a
// proxy never repeat, a restart's or an interleave's do.
func TestStreamOfTwoCompletionsIsRefused(t *testing.T) {
	chunk := func(id, rest string) string {
		return `{"id": "` + id + `", "object": "chat.completion.chunk", "created": 1700000000, "model": "m-1", ` + rest + `}`
	}
	text := func(id, s string) string {
		return chunk(id, `"choices": [{"index": 0, "delta": {"content": "`+s+`"}, "finish_reason": null}]`)
	}
	stop := func(id string) string {
		return chunk(id, `"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]`)
	}
	for _, tc := range []struct {
		name   string
		events []string
	}{
		{"restarted under a new id", []string{
			text("chatcmpl-A", "Your refund of "), text("chatcmpl-A", "$12.99 is"),
			text("chatcmpl-B", "I could not find "), text("chatcmpl-B", "order A-1042."), stop("chatcmpl-B"), "[DONE]",
		}},
		{"two completions interleaved", []string{
			text("chatcmpl-A", "Refund done. "), text("chatcmpl-B", "No such order. "),
			text("chatcmpl-A", "Anything else?"), text("chatcmpl-B", "Sorry."), stop("chatcmpl-A"), stop("chatcmpl-B"), "[DONE]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sseHandler(tc.events...))
			m := newTestModel(t, f)
			resps, errs := collect(testCtx(t), m, userText("refund A-1042"), true)
			if len(errs) == 0 {
				final := resps[len(resps)-1]
				t.Errorf("stream of two completions (ids chatcmpl-A and chatcmpl-B) accepted as one finished answer: %q (TurnComplete=%v), want an error",
					final.Content.Text(), final.TurnComplete)
			}
		})
	}
}
