package gemini

import (
	"context"
	"net/http"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// A 429 whose body has the QuotaFailure details of a spent daily quota but
// no usable code (none, or gRPC's 8 for RESOURCE_EXHAUSTED) is wrapped in a
// ProviderError with the HTTP status, and classifyProvider reads only
// that status there (geminiQuotaSpent of the APIError's details is not
// consulted): RATE_LIMITED, retried by the decorator and degraded, where
// the taxonomy says QUOTA_EXHAUSTED (never retry).
func TestSpentQuotaWithoutABodyCodeIsQuotaExhausted(t *testing.T) {
	const details = `"status":"RESOURCE_EXHAUSTED","message":"quota","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure",` +
		`"violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]`
	for _, body := range []string{`{"error":{` + details + `}}`, `{"error":{"code":8,` + details + `}}`} {
		fake := newFake(t, jsonHandler(http.StatusTooManyRequests, body))
		m := newTestModel(t, fake)
		for _, stream := range []bool{false, true} {
			_, errs := collect(context.Background(), m, userText("hi"), stream)
			if len(errs) != 1 {
				t.Fatalf("stream=%v: errors %v, want one", stream, errs)
			}
			if got := taxonomy.ClassifyError(errs[0]); got != taxonomy.QuotaExhausted {
				t.Errorf("body %s stream=%v: class %s, want %s", body, stream, got, taxonomy.QuotaExhausted)
			}
		}
	}
}
