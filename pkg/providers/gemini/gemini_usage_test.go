package gemini

import "testing"

// Regression (found in review, twenty-first session): a thinking model's
// thoughtsTokenCount is counted among the output tokens
// (Usage.CandidatesTokens).
//
// Gemini's thinking models (2.5, 3) report the thinking tokens apart:
// candidatesTokenCount excludes thoughtsTokenCount, and totalTokenCount =
// prompt + candidates + thoughts (+ tool-use prompt). Thinking tokens are
// output tokens (billed at the output rate), and model.Usage documents
// CandidatesTokens as "the number of output tokens"; the OpenAI adapter
// fills it from completion_tokens, which include reasoning tokens. The
// Gemini adapter copied candidatesTokenCount alone, so a thinking model's
// output was undercounted (5 instead of 505 below) and PromptTokens +
// CandidatesTokens did not add up to TotalTokens.
func TestThinkingTokensCountAsOutput(t *testing.T) {
	f := newFake(t, jsonHandler(200, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "Done."}]}, "finishReason": "STOP", "index": 0}],
	  "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 500, "totalTokenCount": 515}}`))
	for _, stream := range []bool{false, true} {
		var u struct{ p, c, tot int32 }
		if stream {
			f2 := newFake(t, sseHandler(`{"candidates": [{"content": {"role": "model", "parts": [{"text": "Done."}]}, "finishReason": "STOP", "index": 0}],
			  "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 500, "totalTokenCount": 515}}`))
			resps, errs := collect(testCtx(t), newTestModel(t, f2), userText("hi"), true)
			if len(errs) != 0 || len(resps) == 0 || resps[len(resps)-1].Usage == nil {
				t.Fatalf("stream: errors %v responses %d", errs, len(resps))
			}
			us := resps[len(resps)-1].Usage
			u.p, u.c, u.tot = us.PromptTokens, us.CandidatesTokens, us.TotalTokens
		} else {
			r, err := one(t, newTestModel(t, f), userText("hi"))
			if err != nil || r.Usage == nil {
				t.Fatalf("err %v usage %v", err, r)
			}
			u.p, u.c, u.tot = r.Usage.PromptTokens, r.Usage.CandidatesTokens, r.Usage.TotalTokens
		}
		if u.c != 505 || u.p+u.c != u.tot {
			t.Errorf("stream=%v: usage prompt=%d candidates=%d total=%d; want the 500 thinking tokens among the output tokens (candidates 505, prompt+candidates = total)",
				stream, u.p, u.c, u.tot)
		}
	}
}
