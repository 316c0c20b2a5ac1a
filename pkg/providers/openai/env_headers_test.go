package openai

import "testing"

// Regression (found in review, sixteenth session): TestOpenAIEnvironmentCredentialsNotSent: the adapter sets the API
// key explicitly "so OPENAI_API_KEY in the environment is never sent to a
// configured local server", and the base URL "so OPENAI_BASE_URL never
// redirects a worker silently". openai-go's NewClient also reads
// OPENAI_CUSTOM_HEADERS from the environment and sends those headers with
// every request: with no key configured
// (Ollama, vLLM), a bearer token in OPENAI_CUSTOM_HEADERS goes to the
// configured server as its Authorization header.
func TestOpenAIEnvironmentCredentialsNotSent(t *testing.T) {
	t.Setenv("OPENAI_CUSTOM_HEADERS", "Authorization: Bearer sk-from-the-environment")
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f, func(c *Config) { c.APIKey = "" })
	if _, errs := collect(testCtx(t), m, userText("hi"), false); len(errs) != 0 {
		t.Fatal(errs)
	}
	h := f.last(t).Header
	if got := h.Get("Authorization"); got != "" {
		t.Errorf("Authorization sent to the configured server from the environment: %q", got)
	}
}
