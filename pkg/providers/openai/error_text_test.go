package openai

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, sixteenth session): TestOpenAIErrorTextKeepsProviderMessage: the text of a thrown
// OpenAI error is what the fleet keeps as the failure's raw message
// (taxonomy.Failure.Raw, the DLQ entry's reason, the PAGE log line). The
// openai-go version in go.mod renders *openai.Error as a safe summary
// ("OpenAI API error: 400 Bad Request") without the body's message or
// code, and the adapter wraps it with %w and nothing else, so the person
// paged for a BAD_REQUEST (or reviewing an UNKNOWN) cannot tell what the
// provider refused. The Gemini adapter's errors and this adapter's own
// undecodable-body errors do carry the provider's text.
func TestOpenAIErrorTextKeepsProviderMessage(t *testing.T) {
	const msg = "Invalid value for 'temperature'."
	body := `{"error": {"message": "` + msg + `", "type": "invalid_request_error", "param": "temperature", "code": "invalid_value"}}`
	for _, stream := range []bool{false, true} {
		f := newFake(t, jsonHandler(400, body))
		_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), stream)
		if len(errs) != 1 {
			t.Fatalf("stream=%v: errs = %v", stream, errs)
		}
		fail := taxonomy.FailureFromError("gpt-4.1-mini", errs[0])
		if fail.Class != taxonomy.BadRequest {
			t.Fatalf("stream=%v: class %s", stream, fail.Class)
		}
		if !strings.Contains(fail.Raw, msg) && !strings.Contains(fail.Raw, "invalid_value") {
			t.Errorf("stream=%v: raw message %q names neither the provider's message nor its code", stream, fail.Raw)
		}
	}
}
