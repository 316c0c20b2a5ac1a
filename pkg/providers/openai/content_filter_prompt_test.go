package openai

import "testing"

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
	assertPromptBlocked(t, azurePromptFiltered400)
}
