package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, nineteenth session): TestArrayErrorBodyKeepsMessage:
// Gemini's OpenAI-compatible endpoint
// (generativelanguage.googleapis.com/v1beta/openai/, an "OpenAI-compatible"
// server this adapter is meant for) sends its errors as a JSON array holding
// one Google error object: `[{"error": {"code": 400, "message": "...",
// "status": "INVALID_ARGUMENT"}}]` (e.g. n4ze3m/page-assist#406 shows the
// 429 form). The SDK looks up "error" at the top of the body, finds nothing
// in an array, and builds an *openai.Error with no code and no message;
// wrapError then had nothing to add, and the error text (what the DLQ
// reason, the invocation record and the PAGE log line show) was only
// "OpenAI API error: 400 Bad Request": the regression the sixteenth session
// fixed for object bodies ("a paged BAD_REQUEST read "400 Bad Request"
// only"), back for every error of this server. Correct: when the SDK's
// error carries no message, the adapter reads the body the SDK kept
// (apiErr.Response.Body, or the array's first element's "error") and keeps
// the provider's message (and status) in the error text, as it does for
// `{"error": "text"}` bodies.
func TestArrayErrorBodyKeepsMessage(t *testing.T) {
	const msg = "Invalid JSON payload received. Unknown name max_completion_tokens: Cannot find field."
	body := "[{\n  \"error\": {\n    \"code\": 400,\n    \"message\": \"" + msg + "\",\n    \"status\": \"INVALID_ARGUMENT\"\n  }\n}\n]\n"
	for _, stream := range []bool{false, true} {
		f := newFake(t, jsonHandler(400, body))
		m := newTestModel(t, f)
		_, errs := collect(testCtx(t), m, userText("hi"), stream)
		if len(errs) != 1 {
			t.Fatalf("stream=%v: errors %v, want one", stream, errs)
		}
		if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.BadRequest {
			t.Errorf("stream=%v: class %s, want BAD_REQUEST", stream, c)
		}
		reason := tool.SanitizeString(errs[0].Error())
		if !strings.Contains(reason, "Unknown name max_completion_tokens") {
			t.Errorf("stream=%v: the DLQ reason %q lost the provider's message %q", stream, reason, msg)
		}
		if !strings.Contains(reason, "INVALID_ARGUMENT") {
			t.Errorf("stream=%v: the DLQ reason %q lost the provider's status", stream, reason)
		}
		// The body read for the text is put back for the SDK's DumpResponse.
		var apiErr *openai.Error
		if !errors.As(errs[0], &apiErr) || !strings.Contains(string(apiErr.DumpResponse(true)), msg) {
			t.Errorf("stream=%v: the SDK's kept body was consumed", stream)
		}
	}
}

// TestTopLevelMessageErrorBodyKeepsMessage: an error body with the message
// at the top level (vLLM's older form: {"object": "error", "message": ...,
// "code": 400}) also keeps the provider's message in the error text, and
// the class is still the status's.
func TestTopLevelMessageErrorBodyKeepsMessage(t *testing.T) {
	const msg = "This model's maximum context length is 4096 tokens."
	body := `{"object": "error", "message": "` + msg + `", "type": "BadRequestError", "param": null, "code": 400}`
	for _, stream := range []bool{false, true} {
		f := newFake(t, jsonHandler(400, body))
		_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), stream)
		if len(errs) != 1 {
			t.Fatalf("stream=%v: errors %v, want one", stream, errs)
		}
		if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.BadRequest {
			t.Errorf("stream=%v: class %s, want BAD_REQUEST", stream, c)
		}
		if !strings.Contains(errs[0].Error(), msg) {
			t.Errorf("stream=%v: error text %q lost the provider's message", stream, errs[0].Error())
		}
	}
}
