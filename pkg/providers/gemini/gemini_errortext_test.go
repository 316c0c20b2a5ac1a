package gemini

import (
	"strings"
	"testing"
)

// Regression (found in review, twenty-first session): an error response
// whose body has no usable HTTP code keeps the provider's message in the
// returned error's text.
//
// An error body without a usable HTTP code (a proxy's
// `{"error": {"message": "no healthy upstream"}}`, or Gemini's shape with
// gRPC's code 8 for RESOURCE_EXHAUSTED) is wrapped by withHTTPStatus in a
// *model.ProviderError that carries the HTTP status; its Message was set
// only when the server sent a retry hint, and ProviderError.Error() does
// not print its Err. So the returned error's text, what the taxonomy logs
// raw and the DLQ keeps as the reason, was only "gemini: model call failed:
// HTTP 503 Service Unavailable": the provider's message, status string and
// details (which quota was spent) were gone. ProviderError.Message is
// documented as "the provider's raw message, kept for logs and review", and
// the taxonomy seed says the raw message must be kept alongside the class.
func TestStatusOnlyErrorKeepsProviderMessage(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{503, `{"error": {"message": "no healthy upstream"}}`, "no healthy upstream"},
		{429, `{"error":{"code":8,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded for metric generate_content_free_tier_requests",` +
			`"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`,
			"Quota exceeded for metric"},
	} {
		f := newFake(t, jsonHandler(tc.status, tc.body))
		m := newTestModel(t, f)
		for _, stream := range []bool{false, true} {
			_, errs := collect(testCtx(t), m, userText("hi"), stream)
			if len(errs) != 1 {
				t.Fatalf("HTTP %d stream=%v: errors %v, want one", tc.status, stream, errs)
			}
			if got := errs[0].Error(); !strings.Contains(got, tc.want) {
				t.Errorf("HTTP %d stream=%v: error text %q lost the provider's message %q", tc.status, stream, got, tc.want)
			}
		}
	}
}
