// Package taxonomytest produces real provider SDK errors for tests: it
// serves a scripted HTTP error from an httptest server and lets the real
// google.golang.org/genai or openai-go client turn it into its own error
// type, so a change in an SDK's error shape breaks a test instead of
// production.
package taxonomytest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"
)

// QuotaFailure returns a google.rpc.QuotaFailure error detail naming one
// violated quota (e.g. "GenerateRequestsPerDayPerProjectPerModel-FreeTier").
func QuotaFailure(quotaID, quotaMetric string) map[string]any {
	return map[string]any{
		"@type": "type.googleapis.com/google.rpc.QuotaFailure",
		"violations": []any{map[string]any{
			"quotaMetric": quotaMetric,
			"quotaId":     quotaID,
			"quotaValue":  "200",
		}},
	}
}

// RetryInfo returns a google.rpc.RetryInfo error detail with retryDelay
// delay (protobuf JSON duration, e.g. "17s").
func RetryInfo(delay string) map[string]any {
	return map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
}

// GeminiError makes a real Gemini API call (genai client, Gemini API
// backend, no SDK retries) against a server that answers with HTTP status
// and the Google error envelope {"error": {code, message, status,
// details}}, and returns the error the SDK returned. It fails t if the
// call succeeds.
func GeminiError(t testing.TB, status int, apiStatus, message string, details ...map[string]any) error {
	t.Helper()
	body := map[string]any{"error": map[string]any{
		"code": status, "message": message, "status": apiStatus, "details": details,
	}}
	srv := serve(t, status, nil, body)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      "test-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		t.Fatalf("genai.NewClient: %v", err)
	}
	_, err = client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", genai.Text("hi"), nil)
	if err == nil {
		t.Fatalf("Gemini call against a %d server succeeded", status)
	}
	return err
}

// OpenAIError makes a real chat-completions call (openai-go client, no SDK
// retries) against a server that answers with HTTP status, the given
// headers and the OpenAI error envelope {"error": {message, type, code}},
// and returns the error the SDK returned (an *openai.Error). It fails t if
// the call succeeds.
func OpenAIError(t testing.TB, status int, header http.Header, errType, code, message string) error {
	t.Helper()
	body := map[string]any{"error": map[string]any{
		"message": message, "type": errType, "code": code, "param": nil,
	}}
	srv := serve(t, status, header, body)
	client := openai.NewClient(
		option.WithBaseURL(srv.URL),
		option.WithAPIKey("test-key"),
		option.WithMaxRetries(0),
	)
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err == nil {
		t.Fatalf("OpenAI call against a %d server succeeded", status)
	}
	return err
}

func serve(t testing.TB, status int, header http.Header, body any) *httptest.Server {
	t.Helper()
	payload, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("marshal error body: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(payload)
	}))
	t.Cleanup(srv.Close)
	return srv
}
