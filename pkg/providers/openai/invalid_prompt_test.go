package openai

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// invalidPrompt400 is OpenAI's answer to a prompt its policy check flagged
// (reasoning models; the body as the API sends it).
const invalidPrompt400 = `{"error": {"message": "Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again with a different prompt: https://platform.openai.com/docs/guides/reasoning#advice-on-prompting", "type": "invalid_request_error", "param": null, "code": "invalid_prompt"}}`

// A prompt the provider refuses on policy grounds is PROMPT_BLOCKED in the
// taxonomy (substitute a refusal, policy view). OpenAI says so with a
// structured code, "invalid_prompt", on an HTTP 400, and the adapter answers
// it in-band as a prompt block. (It passed it on as a plain 400, and the
// classifier filed it BAD_REQUEST: a page-level correctness alert and a dead
// letter waiting for a "fix", for a user's message, and the user got no
// refusal.)
func TestFlaggedPromptIsPromptBlocked(t *testing.T) {
	assertPromptBlocked(t, invalidPrompt400)
}

// assertPromptBlocked checks that an HTTP 400 with body classifies
// PROMPT_BLOCKED, streamed or not: an in-band response, or an error that
// classifies so.
func assertPromptBlocked(t *testing.T, body string) {
	t.Helper()
	for _, stream := range []bool{false, true} {
		f := newFake(t, jsonHandler(400, body))
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
			t.Errorf("stream=%v: class %s (page=%v, refuse=%v), want PROMPT_BLOCKED (errs %v)", stream, class, p.Page, p.Refuse, errs)
		}
	}
}
