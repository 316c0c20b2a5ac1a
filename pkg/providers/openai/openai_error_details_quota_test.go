package openai

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review of this session's fix, twenty-third session):
// an OpenAI error body that also carried a details array was read as a
// Google error, so a spent quota (429 insufficient_quota) was RATE_LIMITED.
// TestOpenAIErrorWithUntypedDetailsKeepsQuotaExhausted: the adapter built
// a genai.APIError from any error body with details that are JSON objects,
// and pkg/taxonomy checks genai.APIError before *openai.Error; that
// error's status (429) and details (no google.rpc type) say RATE_LIMITED,
// so OpenAI's insufficient_quota code was never read and a spent quota was
// retried as if waiting could refill it. Google's details always name
// their type ("@type"); a body whose details name none is OpenAI's error,
// classified by its code: QUOTA_EXHAUSTED, plain and streaming.
func TestOpenAIErrorWithUntypedDetailsKeepsQuotaExhausted(t *testing.T) {
	const body = `{
  "error": {
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "type": "insufficient_quota",
    "param": null,
    "code": "insufficient_quota",
    "details": [{"reason": "billing_hard_limit_reached", "limit": "monthly"}]
  }
}`
	for _, stream := range []bool{false, true} {
		f := newFake(t, jsonHandler(429, body))
		_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), stream)
		if len(errs) != 1 {
			t.Fatalf("stream=%v: errors %v, want one", stream, errs)
		}
		if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.QuotaExhausted {
			t.Errorf("stream=%v: 429 insufficient_quota with untyped details classified %s, want QUOTA_EXHAUSTED (%v)", stream, c, errs[0])
		}
	}
}
