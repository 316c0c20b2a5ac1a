package openai

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, seventeenth session): TestQuotaTypeEventIsQuotaExhausted: streamErrorStatus now maps an
// error event whose type is "insufficient_quota" to 429, but the adapter's
// QuotaExhausted flag still reads only the code. An event with that type
// and no code (or another code) becomes a plain 429: RATE_LIMITED, retried
// and cooled down, where the taxonomy (for *openai.Error it checks Code or
// Type) and DESIGN.md say a spent quota is QUOTA_EXHAUSTED, never retried.
// Before the change it was UNKNOWN (not retried either).
func TestQuotaTypeEventIsQuotaExhausted(t *testing.T) {
	const ev = `{"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": null}}`
	f := newFake(t, sseHandler(ev))
	m := newTestModel(t, f)
	_, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want one", errs)
	}
	if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.QuotaExhausted {
		t.Errorf("stream error event of type insufficient_quota: class %s, want QUOTA_EXHAUSTED (error: %v)", c, errs[0])
	}
}
