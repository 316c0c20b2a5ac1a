package taxonomy_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/openai"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review of this session's fix, twenty-third session):
// the sanitised "llm error" line kept a single-label host and its port from
// a provider error the OpenAI adapter passes through (a LiteLLM proxy whose
// backend is down: aiohttp's "Cannot connect to host vllm-backend:8000"),
// because the sanitiser's hostPortRE wants a dot and netHostPortRE looked
// only after "tcp ", "->" or "@"; it now looks after "host" too.
func TestLLMErrorLogLineSingleLabelProviderHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"litellm.InternalServerError: OpenAIException - Cannot connect to host vllm-backend:8000 ssl:default [Connect call failed ('10.1.2.3', 8000)]","type":null,"param":null,"code":"500"}}`)
	}))
	defer srv.Close()
	m, err := openai.New(openai.Config{Model: "gpt-x", BaseURL: srv.URL + "/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Model: "gpt-x", Contents: []*model.Content{model.NewTextContent(model.RoleUser, "hi")}}
	var callErr error
	for _, err := range m.GenerateContent(context.Background(), req, false) {
		if err != nil {
			callErr = err
		}
	}
	if callErr == nil {
		t.Fatal("want an error")
	}
	var logs bytes.Buffer
	cb := taxonomy.OnModelError(taxonomy.CallbackOptions{Model: "gpt-x", Logger: zerolog.New(&logs)})
	_, _ = cb(context.Background(), nil, req, callErr)
	if !strings.Contains(logs.String(), `"llm error"`) {
		t.Fatalf("no llm error line: %q", logs.String())
	}
	for _, s := range []string{"vllm-backend", "10.1.2.3"} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the llm error log line leaks %q: %s", s, strings.TrimSpace(logs.String()))
		}
	}
}
