package openai

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, nineteenth session): TestEchoedAPIKeyNotInErrorText:
// an OpenAI-compatible server that refuses the key may quote it back in its
// error message: a LiteLLM proxy answers an unknown virtual key with 401
// "Authentication Error, Invalid proxy server token passed. key=<the key>
// not found in db. Create key via `/key/generate` call." (real text, from
// a LiteLLM traceback). Since the sixteenth session wrapError copies the
// body's code and message into the error text, so the adapter's own API key
// ended up verbatim in err.Error(): the taxonomy callbacks log that text
// raw ("llm error" raw=..., at ERROR level since AUTH pages), and the DLQ
// entry's reason, the invocation record and the worker's PAGE log line get
// it through tool.SanitizeString, which does not redact "key=…" (only
// api_key, token, secret, ... names). The adapter is the one layer that
// knows its credential: every error text it returns must have the
// configured key removed (e.g. replaced by "[redacted]"), while keeping the
// rest of the provider's message and the AUTH class.
func TestEchoedAPIKeyNotInErrorText(t *testing.T) {
	const key = "sk-live-9f8e7d6c5b4a3210ffee"
	body := `{"error": {"message": "Authentication Error, Invalid proxy server token passed. key=` + key +
		` not found in db. Create key via ` + "`/key/generate`" + ` call.", "type": "auth_error", "param": "None", "code": "401"}}`
	for _, stream := range []bool{false, true} {
		f := newFake(t, jsonHandler(401, body))
		m := newTestModel(t, f, func(c *Config) { c.APIKey = key })
		_, errs := collect(testCtx(t), m, userText("hi"), stream)
		if len(errs) != 1 {
			t.Fatalf("stream=%v: errors %v, want one", stream, errs)
		}
		err := errs[0]
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || taxonomy.ClassifyError(err) != taxonomy.Auth {
			t.Fatalf("stream=%v: %v: want an AUTH *openai.Error", stream, err)
		}
		if strings.Contains(err.Error(), key) {
			t.Errorf("stream=%v: the error text (logged raw by the taxonomy callbacks) holds the configured API key: %q", stream, err.Error())
		}
		if reason := tool.SanitizeString(err.Error()); strings.Contains(reason, key) {
			t.Errorf("stream=%v: the DLQ reason (sanitised error text) holds the configured API key: %q", stream, reason)
		}
	}
}

// TestRedactErrorKeepsChain: the last guard (redactError) over any error
// text the adapter returns replaces the configured key and still unwraps to
// the original error, so classification by type and status is unchanged;
// a placeholder key shorter than model.MinRedactedKeyLen is left alone.
func TestRedactErrorKeepsChain(t *testing.T) {
	const key = "sk-proj-0123456789abcdef"
	m := &Model{cfg: Config{APIKey: " " + key + "\n"}}
	inner := &model.ProviderError{Provider: ProviderName, StatusCode: 401, Message: "token " + key + " refused"}
	err := m.redactError(fmt.Errorf("openai: chat completion (model %s): %w", key, inner))
	if got := err.Error(); strings.Contains(got, key) || strings.Count(got, model.RedactedKey) != 2 {
		t.Errorf("text %q: want the key replaced by %q everywhere", got, model.RedactedKey)
	}
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe != inner || taxonomy.ClassifyError(err) != taxonomy.Auth {
		t.Errorf("%v: the redacted error lost its chain", err)
	}
	plain := errors.New("no key here")
	if got := m.redactError(plain); got != plain {
		t.Errorf("an error without the key was wrapped: %T", got)
	}
	if m.redactError(nil) != nil {
		t.Error("nil error wrapped")
	}
	short := &Model{cfg: Config{APIKey: "ollama"}}
	if got := short.redact("model ollama/llama3 not found"); got != "model ollama/llama3 not found" {
		t.Errorf("placeholder key redacted: %q", got)
	}
}
