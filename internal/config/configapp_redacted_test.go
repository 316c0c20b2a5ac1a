package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, twenty-second session): Worker.Redacted
// removes the passwords of model.openai_base_url and model.gemini_base_url.
//
// Worker.Redacted says it returns "a copy with passwords removed from fields
// and URLs, for logging". model.openai_base_url and model.gemini_base_url
// are URLs too, and an OpenAI-compatible server behind basic auth is
// configured as http://user:password@host/v1 (the worker already redacts
// that URL in its errors, TestOpenAIBaseURLPasswordNotPrinted); Redacted
// leaves both base URLs as they are, so a configuration printed through it
// shows the password.
func TestRedactedHidesBaseURLPasswords(t *testing.T) {
	const secret = "s3cr3t-basic-auth"
	c := config.DefaultWorker()
	c.Model.OpenAIBaseURL = "http://vllm:" + secret + "@10.0.0.5:8000/v1"
	c.Model.GeminiBaseURL = "https://proxy:" + secret + "@gemini-proxy.internal/"
	if s := fmt.Sprintf("%+v", c.Redacted()); strings.Contains(s, secret) {
		t.Errorf("Worker.Redacted() still holds a base URL's password:\n%+v", c.Redacted().Model)
	}
}
