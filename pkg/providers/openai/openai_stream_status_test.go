package openai

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-first session): a stream error event
// whose code is an HTTP status (500, or "429" as a string) is classified by
// that status.
//
// An error event inside a stream whose "code" is the HTTP status of the
// failure (vLLM's create_streaming_error_response sends
// {"error": {"object": "error", "type": "InternalServerError", "code": 500}};
// a LiteLLM proxy sends the status as a string, "code": "429", and reads it
// back as the status itself) is classified UNKNOWN: streamErrorStatus only
// knows OpenAI's words (server_error, rate_limit_exceeded,
// invalid_request_error, insufficient_quota). A vLLM server error or a
// proxy's rate limit before any output is then never retried, never
// degraded and dead-lettered for a person, never replayed automatically;
// the event says the status outright.
func TestStreamErrorEventWithHTTPStatusCode(t *testing.T) {
	cases := []struct {
		name  string
		event string
		want  taxonomy.Class
	}{
		{"vLLM internal error (numeric code)",
			`{"error": {"object": "error", "message": "CUDA out of memory", "type": "InternalServerError", "param": null, "code": 500}}`,
			taxonomy.Server},
		{"vLLM bad request (numeric code)",
			`{"error": {"object": "error", "message": "This model's maximum context length is 8192 tokens", "type": "BadRequestError", "param": null, "code": 400}}`,
			taxonomy.BadRequest},
		{"LiteLLM rate limit (status as string)",
			`{"error": {"message": "litellm.RateLimitError: Rate limit exceeded", "type": "None", "param": "None", "code": "429"}}`,
			taxonomy.RateLimited},
		{"LiteLLM upstream 503 (status as string)",
			`{"error": {"message": "litellm.ServiceUnavailableError: upstream overloaded", "type": "None", "param": "None", "code": "503"}}`,
			taxonomy.Server},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sseHandler(tc.event))
			_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
			if len(errs) != 1 {
				t.Fatalf("errors = %v, want one", errs)
			}
			if got := taxonomy.ClassifyError(errs[0]); got != tc.want {
				t.Errorf("stream error event %s: class %s, want %s (error: %v)", tc.event, got, tc.want, errs[0])
			}
		})
	}
}
