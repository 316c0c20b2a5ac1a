package gemini

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// echoedKey is the configured API key the servers below quote back.
const echoedKey = "sk-9f8e7d6c5b4a3210ffee"

// Regression (found in review, nineteenth session): TestEchoedAPIKeyNotInErrorText:
// a server set as Config.BaseURL (a LiteLLM proxy in front of Gemini) may
// quote the key it refused: LiteLLM answers an unknown virtual key with 401
// "Authentication Error, Invalid proxy server token passed. key=<the key>
// not found in db." genai.APIError.Error() prints Message and Details
// verbatim, and when the body is not JSON or has no usable "error" member
// (LiteLLM's "code" is a string) genai makes the whole raw body the
// Message; the adapter wrapped it with %w (streaming and not) and
// withHTTPStatus copied err.Error() into ProviderError.Message. So the
// adapter's own API key reached the taxonomy's raw "llm error" log line and
// the DLQ reason (tool.SanitizeString does not redact "key=…"). Every
// error the adapter returns must have the configured key removed: its
// text, the APIError's Message, Status and Details, and the
// ProviderError's Message; classification and the retry hint unchanged.
func TestEchoedAPIKeyNotInErrorText(t *testing.T) {
	litellm := `{"error": {"message": "Authentication Error, Invalid proxy server token passed. key=` + echoedKey +
		` not found in db. Create key via ` + "`/key/generate`" + ` call.", "type": "auth_error", "param": "None", "code": "401"}}`
	for _, tc := range []struct {
		name        string
		handler     func(w http.ResponseWriter, r *http.Request)
		streamOnly  bool
		want        taxonomy.Class
		wantHint    time.Duration
		wantAPIErr  bool
		wantProvErr bool
	}{
		{name: "LiteLLM body (string code: raw body as Message)", handler: jsonHandler(http.StatusUnauthorized, litellm),
			want: taxonomy.Auth, wantAPIErr: true},
		{name: "plain text body", handler: textHandler(http.StatusUnauthorized, "Invalid proxy server token passed. key="+echoedKey+" not found in db"),
			want: taxonomy.Auth, wantAPIErr: true},
		{name: "error without code (status from the response)", handler: jsonHandler(http.StatusServiceUnavailable,
			`{"error": {"message": "upstream refused key `+echoedKey+`", "status": "UNAVAILABLE `+echoedKey+`"}}`),
			want: taxonomy.Server, wantAPIErr: true, wantProvErr: true},
		{name: "Retry-After (ProviderError carries the text)", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			jsonHandler(http.StatusTooManyRequests, `{"error": {"code": 429, "message": "key `+echoedKey+` is over its rate limit",
 "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
 "metadata": {"key": "`+echoedKey+`"}}]}}`)(w, r)
		}, want: taxonomy.RateLimited, wantHint: 7 * time.Second, wantAPIErr: true, wantProvErr: true},
		{name: "error event in the stream", streamOnly: true,
			handler: sseHandler(`{"error": {"code": 401, "message": "key=` + echoedKey + ` not found in db", "status": "UNAUTHENTICATED"}}`),
			want:    taxonomy.Auth, wantAPIErr: true},
		{name: "undecodable stream line", streamOnly: true, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "proxy-error: key="+echoedKey+" not found in db\r\n\r\n")
		}, want: taxonomy.Unknown},
	} {
		for _, stream := range []bool{false, true} {
			if tc.streamOnly && !stream {
				continue
			}
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				m := newTestModel(t, newFake(t, tc.handler), func(c *Config) { c.APIKey = echoedKey })
				_, errs := collect(testCtx(t), m, userText("hi"), stream)
				if len(errs) != 1 {
					t.Fatalf("errors %v, want one", errs)
				}
				err := errs[0]
				if got := taxonomy.ClassifyError(err); got != tc.want {
					t.Errorf("class %s, want %s (%v)", got, tc.want, err)
				}
				if d, _ := retry.ServerHint(err, time.Now()); d < tc.wantHint {
					t.Errorf("retry hint %s, want at least %s", d, tc.wantHint)
				}
				if strings.Contains(err.Error(), echoedKey) {
					t.Errorf("the error text (logged raw by the taxonomy callbacks) holds the configured API key: %q", err.Error())
				}
				if reason := tool.SanitizeString(err.Error()); strings.Contains(reason, echoedKey) {
					t.Errorf("the DLQ reason (sanitised error text) holds the configured API key: %q", reason)
				}
				var apiErr genai.APIError
				if errors.As(err, &apiErr) {
					if s := fmt.Sprintf("%+v", apiErr); strings.Contains(s, echoedKey) {
						t.Errorf("the genai.APIError in the chain holds the configured API key: %s", s)
					}
				} else if tc.wantAPIErr {
					t.Errorf("%v: no genai.APIError in the chain", err)
				}
				var pe *model.ProviderError
				if errors.As(err, &pe) {
					if strings.Contains(pe.Message, echoedKey) {
						t.Errorf("ProviderError.Message holds the configured API key: %q", pe.Message)
					}
				} else if tc.wantProvErr {
					t.Errorf("%v: no *model.ProviderError in the chain", err)
				}
			})
		}
	}
}

// textHandler answers every request with status and a plain-text body.
func textHandler(status int, body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// TestRedactSDKErrorKeepsDetails: the redacted copy of a genai.APIError
// (value or pointer) keeps its code and the structure of its details (a
// RetryInfo still gives retry.ServerHint its delay, the class is
// unchanged), holds the key nowhere, and the SDK's original is not changed.
func TestRedactSDKErrorKeepsDetails(t *testing.T) {
	m := &Model{cfg: Config{APIKey: echoedKey}}
	orig := genai.APIError{Code: 429, Message: "key " + echoedKey + " is over its rate limit", Status: "RESOURCE_EXHAUSTED",
		Details: []map[string]any{
			{"@type": taxonomy.TypeRetryInfo, "retryDelay": "8s"},
			{"@type": taxonomy.TypeErrorInfo, "reason": "RATE_LIMIT_EXCEEDED", "metadata": map[string]any{"key": echoedKey, "keys": []any{echoedKey, 1.0}}},
			nil,
		}}
	before := fmt.Sprintf("%+v", orig)
	for _, in := range []error{orig, &orig} {
		got := m.redactSDKError(in)
		if s := fmt.Sprintf("%v %+v", got, got); strings.Contains(s, echoedKey) {
			t.Errorf("%T: the redacted error holds the key: %s", in, s)
		}
		if d, ok := retry.ServerHint(got, time.Now()); !ok || d != 8*time.Second {
			t.Errorf("%T: retry hint %s %v, want 8s", in, d, ok)
		}
		if c := taxonomy.ClassifyError(got); c != taxonomy.ClassifyError(in) {
			t.Errorf("%T: class %s, want %s", in, c, taxonomy.ClassifyError(in))
		}
	}
	if after := fmt.Sprintf("%+v", orig); after != before {
		t.Errorf("the SDK's APIError was changed:\n%s\nwant\n%s", after, before)
	}
	plain := errors.New("no key here")
	if got := m.redactSDKError(plain); got != plain {
		t.Errorf("an error without the key was wrapped: %T", got)
	}
}
