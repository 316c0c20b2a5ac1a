package gemini

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Regression (found in review, twenty-first session): a redirect from the
// configured endpoint to another host never carries the API key
// (x-goog-api-key) there.
//
// The API key travels in the custom header x-goog-api-key. net/http drops
// Authorization, Cookie and WWW-Authenticate when it follows a redirect to
// another host, but forwards every other header: a configured endpoint
// (Config.BaseURL: a proxy, a regional endpoint) that answers with a
// redirect to another host, or from https to http, gets the fleet's Gemini
// key sent there, in clear text in the downgrade case. The adapter builds
// the HTTP client (withStatusTransport) and set no CheckRedirect.
func TestRedirectDoesNotSendKeyToAnotherHost(t *testing.T) {
	const key = "AIzaSyD-review-secret-0123456789"
	other := newFake(t, jsonHandler(200, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}`))
	otherURL := strings.Replace(other.srv.URL, "127.0.0.1", "localhost", 1) // another host name
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)
	m := newTestModel(t, &fakeGemini{srv: front}, func(c *Config) { c.APIKey = key })
	_, _ = collect(testCtx(t), m, userText("hi"), false)
	if other.count() > 0 {
		if got := other.last(t).Header.Get("x-goog-api-key"); got == key {
			t.Errorf("a redirect from %s to %s sent the API key (x-goog-api-key) to the other host", front.URL, otherURL)
		}
	}
}
