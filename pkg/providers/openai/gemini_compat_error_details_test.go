package openai

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-third session): a key refused by
// Gemini's OpenAI-compatible endpoint (400 with an ErrorInfo
// API_KEY_INVALID) was BAD_REQUEST, not AUTH, because the adapter read only
// the text of its error body. TestGeminiCompatRefusedKeyIsAuth: Gemini's
// OpenAI-compatible endpoint (generativelanguage.googleapis.com/v1beta/openai/, a server this
// adapter names as supported, whose array error body it already reads)
// refuses a bad API key as the Gemini API does: HTTP 400 INVALID_ARGUMENT
// with a google.rpc.ErrorInfo reason API_KEY_INVALID (this body is what the
// endpoint sends, e.g. continuedev/continue#8516). The project decided that
// this refusal is AUTH, by that structured reason (README, "a refused Gemini
// key is AUTH": filed BAD_REQUEST it pages the owner of request building
// for a revoked credential); through this adapter the same refusal from the
// same provider was still BAD_REQUEST.
func TestGeminiCompatRefusedKeyIsAuth(t *testing.T) {
	const body = `[{
  "error": {
    "code": 400,
    "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
        "metadata": {"service": "generativelanguage.googleapis.com"}
      },
      {
        "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
        "locale": "en-US",
        "message": "API key not valid. Please pass a valid API key."
      }
    ]
  }
}
]`
	for _, stream := range []bool{false, true} {
		f := newFake(t, jsonHandler(400, body))
		_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), stream)
		if len(errs) != 1 {
			t.Fatalf("stream=%v: errors %v, want one", stream, errs)
		}
		if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.Auth {
			t.Errorf("stream=%v: Gemini's refused key (400 API_KEY_INVALID) classified %s, want AUTH as through the Gemini adapter (%v)", stream, c, errs[0])
		}
	}
}

// Regression (found in review, twenty-third session): Gemini's
// OpenAI-compatible endpoint's 429 for a spent daily quota was
// RATE_LIMITED, and its RetryInfo was lost.
// TestGeminiCompatDailyQuotaIsQuotaExhausted: the same endpoint's 429 for
// a spent daily quota (a google.rpc.QuotaFailure on a per-day quota) is
// QUOTA_EXHAUSTED through the Gemini adapter (never retried, replayed
// after the reset); through this adapter it was RATE_LIMITED, so
// the retry layer retries a quota that waiting seconds cannot refill and
// the worker dead-letters it as transient.
func TestGeminiCompatDailyQuotaIsQuotaExhausted(t *testing.T) {
	const body = `[{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{
          "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
          "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
          "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
          "quotaValue": "250"
        }]
      },
      {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "43s"}
    ]
  }
}
]`
	f := newFake(t, jsonHandler(429, body))
	_, errs := collect(testCtx(t), newTestModel(t, f), userText("hi"), false)
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one", errs)
	}
	if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.QuotaExhausted {
		t.Errorf("Gemini's spent daily quota classified %s, want QUOTA_EXHAUSTED as through the Gemini adapter (%v)", c, errs[0])
	}
	if d, ok := retry.ServerHint(errs[0], time.Now()); !ok || d != 43*time.Second {
		t.Errorf("retry hint %v, %v; want the RetryInfo's 43s", d, ok)
	}
	// The SDK's error is still there, and the text is the SDK's with the
	// provider's message.
	var apiErr *openai.Error
	if !errors.As(errs[0], &apiErr) || apiErr.StatusCode != 429 || !strings.Contains(errs[0].Error(), "You exceeded your current quota") {
		t.Errorf("%v: lost the *openai.Error or the provider's message", errs[0])
	}
}

// TestGeminiCompatErrorDetailsHoldNoKey: the genai.APIError the adapter
// adds to the chain has the configured key removed from its message,
// status and details, as the Gemini adapter's has; its structure (the
// ErrorInfo's reason) is kept.
func TestGeminiCompatErrorDetailsHoldNoKey(t *testing.T) {
	const key = "AIzaSyA-0123456789abcdefghij"
	body := `[{"error": {"code": 400, "message": "API key ` + key + ` not valid.", "status": "INVALID_ARGUMENT",
	  "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
	    "metadata": {"key": "` + key + `", "` + key + `": ["` + key + `"]}}]}}]`
	f := newFake(t, jsonHandler(400, body))
	_, errs := collect(testCtx(t), newTestModel(t, f, func(c *Config) { c.APIKey = key }), userText("hi"), false)
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one", errs)
	}
	var g genai.APIError
	if !errors.As(errs[0], &g) || g.Code != 400 || g.Status != "INVALID_ARGUMENT" || len(g.Details) != 1 || g.Details[0]["reason"] != "API_KEY_INVALID" {
		t.Fatalf("%v: want the Google error in the chain, got %+v", errs[0], g)
	}
	if s := g.Error(); strings.Contains(s, key) {
		t.Errorf("the genai.APIError holds the configured key: %s", s)
	}
	if s := errs[0].Error(); strings.Contains(s, key) {
		t.Errorf("the error text holds the configured key: %s", s)
	}
	if c := taxonomy.ClassifyError(errs[0]); c != taxonomy.Auth {
		t.Errorf("class %s, want AUTH", c)
	}
}
