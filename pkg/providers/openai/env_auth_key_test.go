package openai

import "testing"

// Regression (found in review, sixteenth session): With an API key configured, an Authorization line in
// OPENAI_CUSTOM_HEADERS must not keep the configured key from being sent:
// removing the environment's header must leave the adapter's own
// credentials in place (else every call fails as AUTH and pages).
func TestEnvironmentAuthorizationKeepsConfiguredKey(t *testing.T) {
	t.Setenv("OPENAI_CUSTOM_HEADERS", "Authorization: Bearer sk-from-the-environment")
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f, func(c *Config) { c.APIKey = "sk-configured" })
	if _, errs := collect(testCtx(t), m, userText("hi"), false); len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := f.last(t).Header.Get("Authorization"); got != "Bearer sk-configured" {
		t.Fatalf("Authorization = %q, want the configured key %q", got, "Bearer sk-configured")
	}
}

// The same for the streaming path.
func TestEnvironmentAuthorizationKeepsConfiguredKeyStreaming(t *testing.T) {
	t.Setenv("OPENAI_CUSTOM_HEADERS", "Authorization: Bearer sk-from-the-environment")
	f := newFake(t, jsonHandler(200, textOK))
	m := newTestModel(t, f, func(c *Config) { c.APIKey = "sk-configured" })
	_, _ = collect(testCtx(t), m, userText("hi"), true)
	if got := f.last(t).Header.Get("Authorization"); got != "Bearer sk-configured" {
		t.Fatalf("Authorization = %q, want the configured key %q", got, "Bearer sk-configured")
	}
}
