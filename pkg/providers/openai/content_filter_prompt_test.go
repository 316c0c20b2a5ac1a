package openai

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// azurePromptFiltered400 is Azure OpenAI's answer (an OpenAI-compatible
// chat completions API, also at /openai/v1/) when its content filter flags
// the prompt: HTTP 400 with the structured code "content_filter" and the
// inner code ResponsibleAIPolicyViolation.
const azurePromptFiltered400 = `{"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.", "type": null, "param": "prompt", "code": "content_filter", "status": 400,
  "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {"hate": {"filtered": false, "severity": "safe"}, "self_harm": {"filtered": false, "severity": "safe"}, "sexual": {"filtered": false, "severity": "safe"}, "violence": {"filtered": true, "severity": "medium"}}}}}`

// A prompt the provider refuses on policy grounds is PROMPT_BLOCKED
// (substitute a refusal, policy view), for the same reason the adapter
// already answers OpenAI's "invalid_prompt" in-band
// (TestFlaggedPromptIsPromptBlocked): a user's message must not page the
// owner of request building and wait in the DLQ for a "fix".
func TestAzurePromptContentFilterIsPromptBlocked(t *testing.T) {
	for _, stream := range []bool{false, true} {
		f := newFake(t, jsonHandler(400, azurePromptFiltered400))
		resps, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), stream)
		var class taxonomy.Class
		switch {
		case len(errs) == 1:
			class = taxonomy.ClassifyError(errs[0])
		case len(resps) > 0:
			class, _ = taxonomy.ClassifyResponse(resps[len(resps)-1])
		}
		if class != taxonomy.PromptBlocked {
			p := taxonomy.PolicyFor(class)
			t.Errorf("stream=%v: class %s (page=%v, refuse=%v), want PROMPT_BLOCKED", stream, class, p.Page, p.Refuse)
		}
	}
}
