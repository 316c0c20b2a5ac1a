package openai

import (
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, twentieth session): cutAfterFinish's doc
// said "an error event the server sent (an API error) ... stay errors", but
// it only excluded *openai.Error (an HTTP error, which never follows a
// chunk). An in-stream error event after the finish chunk
// (*ssestream.StreamError: a gateway's post-output guardrail, a
// server_error before usage) was swallowed and the answer returned as a
// clean, complete turn.
func TestErrorEventAfterFinishStaysAnError(t *testing.T) {
	f := newFake(t, sseHandler(
		chunk(`{"role": "assistant", "content": "Your refund is booked."}`, "null"),
		chunk(`{}`, `"stop"`),
		`{"error": {"message": "Response blocked by output guardrail.", "type": "invalid_request_error", "param": null, "code": "content_policy_violation"}}`,
	))
	m := newTestModel(t, f)
	resps, errs := collect(testCtx(t), m, userText("hi"), true)
	if len(errs) != 1 {
		var final *model.Response
		if len(resps) > 0 {
			final = resps[len(resps)-1]
		}
		t.Fatalf("an error event after the finish chunk: errors %v, final %+v; want the server's error", errs, final)
	}
	var pe *model.ProviderError
	if !errors.As(errs[0], &pe) || !pe.InStream {
		t.Errorf("error = %v, want the in-stream provider error", errs[0])
	}
}
