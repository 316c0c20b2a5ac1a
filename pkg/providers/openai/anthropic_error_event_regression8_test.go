package openai

import (
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-fifth session): an Anthropic-style
// error event passed through an OpenAI-compatible gateway
// ({"type": "error", "error": {"type": "overloaded_error", ...}}) was
// classified UNKNOWN (never retried, dead-lettered for review, never
// replayed) because streamErrorStatus knew only OpenAI's words: an
// overloaded or failing server was not retried, a refused key not paged
// as AUTH. Each Anthropic error type is the stream form of the HTTP status
// Anthropic sends it with, and is classified by that status, as OpenAI's
// own types are.
func TestStreamAnthropicErrorEventIsClassifiedByItsStatus(t *testing.T) {
	for _, tc := range []struct {
		typ    string
		status int
		want   taxonomy.Class
	}{
		{"overloaded_error", 529, taxonomy.Server},
		{"api_error", 500, taxonomy.Server},
		{"rate_limit_error", 429, taxonomy.RateLimited},
		{"authentication_error", 401, taxonomy.Auth},
		{"permission_error", 403, taxonomy.Auth},
		{"not_found_error", 404, taxonomy.NotFound},
		{"invalid_request_error", 400, taxonomy.BadRequest},
		{"request_too_large", 413, taxonomy.BadRequest},
		{"timeout_error", 504, taxonomy.Timeout},
	} {
		ev := `{"type": "error", "error": {"type": "` + tc.typ + `", "message": "Anthropic says ` + tc.typ + `"}}`
		for _, before := range [][]string{nil, {chunk(`{"role": "assistant", "content": "Hel"}`, "null")}} {
			f := newFake(t, sseHandler(append(before, ev)...))
			_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), true)
			if len(errs) != 1 {
				t.Fatalf("%s: errors %v, want one", tc.typ, errs)
			}
			pe := &model.ProviderError{}
			if !errors.As(errs[0], &pe) {
				t.Fatalf("%s: error %v carries no *model.ProviderError", tc.typ, errs[0])
			}
			if c := taxonomy.ClassifyError(errs[0]); c != tc.want || pe.StatusCode != tc.status || !pe.InStream {
				t.Errorf("%s event after %d chunks: class %s, status %d; want %s from HTTP %d (error: %v)", tc.typ, len(before), c, pe.StatusCode, tc.want, tc.status, errs[0])
			}
		}
	}
}
