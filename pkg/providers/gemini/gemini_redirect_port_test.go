package gemini

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Regression (found in review, twenty-first session): a redirect from the
// configured endpoint to another port of the same host never carries the
// API key there.
//
// checkRedirect compared host names only, so a redirect from the
// configured endpoint to another port of the same host (another service,
// another tenant's listener on a shared proxy host) got the API key
// (x-goog-api-key) sent there. An origin is scheme, host and port.
func TestRedirectToAnotherPortKeepsKeyHome(t *testing.T) {
	const key = "AIzaSyD-review-secret-0123456789"
	other := newFake(t, jsonHandler(200, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}`))
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.srv.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect) // same 127.0.0.1, another port
	}))
	t.Cleanup(front.Close)
	m := newTestModel(t, &fakeGemini{srv: front}, func(c *Config) { c.APIKey = key })
	_, _ = collect(testCtx(t), m, userText("hi"), false)
	if other.count() > 0 && other.last(t).Header.Get("x-goog-api-key") == key {
		t.Errorf("a redirect from %s to %s (same host, another port) sent the API key there", front.URL, other.srv.URL)
	}
}
