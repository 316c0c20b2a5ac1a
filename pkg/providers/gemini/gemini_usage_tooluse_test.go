package gemini

import "testing"

// Regression (found in review, twenty-first session): the tool-use prompt
// tokens (toolUsePromptTokenCount) count among the input tokens, so
// PromptTokens + CandidatesTokens = TotalTokens.
//
// Gemini's totalTokenCount also counts toolUsePromptTokenCount (the
// prompt of a built-in tool: Google Search grounding, URL context, code
// execution), which is input. The change claimed PromptTokens +
// CandidatesTokens = TotalTokens, but PromptTokens was still
// promptTokenCount alone, so with a tool-use prompt the two did not add up
// and the input was undercounted.
func TestUsageToolUsePromptTokensAddUp(t *testing.T) {
	f := newFake(t, jsonHandler(200, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "Done."}]}, "finishReason": "STOP", "index": 0}],
	  "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 500, "toolUsePromptTokenCount": 100, "totalTokenCount": 615}}`))
	r, err := one(t, newTestModel(t, f), userText("hi"))
	if err != nil || r.Usage == nil {
		t.Fatalf("err %v usage %v", err, r)
	}
	if u := r.Usage; u.PromptTokens+u.CandidatesTokens != u.TotalTokens {
		t.Errorf("usage prompt=%d candidates=%d total=%d: prompt+candidates != total (the 100 tool-use prompt tokens are in neither)",
			u.PromptTokens, u.CandidatesTokens, u.TotalTokens)
	}
}
