package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

func fuzzSeeds(f *testing.F) {
	for _, tc := range inBandCases {
		f.Add([]byte(tc.body))
	}
	for _, s := range []string{
		textOK, `{}`, `null`, `[]`, `"x"`, `{"choices": null}`, `{"choices": [null]}`, `{"choices": "x"}`,
		`{"choices": [{"index": 3, "message": {"content": 5}}]}`,
		`{"choices": [{"message": {"tool_calls": [null, {"type": "custom", "custom": {"name": "x", "input": "y"}}, {"function": null}]}}]}`,
		`{"choices": [{"message": {"tool_calls": [{"function": {"arguments": "null"}}]}, "finish_reason": "tool_calls"}]}`,
		`{"usage": {"prompt_tokens": 99999999999999, "total_tokens": -5}}`,
		chunk(`{"content": "a"}`, `"stop"`), usageChunk,
	} {
		f.Add([]byte(s))
	}
}

func checkResponse(t *testing.T, r *model.Response) {
	t.Helper()
	if r == nil {
		t.Fatal("nil response")
	}
	if r.ErrorCode == "" && r.ErrorMessage != "" {
		t.Fatalf("error message without error code: %+v", r)
	}
	if r.Content != nil && r.Content.IsEmpty() {
		t.Fatalf("empty content not nil: %+v", r.Content)
	}
	if r.FinishReason == model.FinishReasonMalformedFunctionCall && len(r.FunctionCalls()) != 0 {
		t.Fatalf("malformed response carries function calls: %+v", r)
	}
}

// FuzzFromChatCompletion feeds arbitrary JSON, decoded into the SDK type,
// through the mapping function.
func FuzzFromChatCompletion(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var cc openai.ChatCompletion
		if err := json.Unmarshal(body, &cc); err != nil {
			return
		}
		checkResponse(t, FromChatCompletion(&cc))
	})
}

// FuzzOpenAIResponse feeds arbitrary bodies through a real HTTP round trip
// (plain and as a one-event stream): the adapter must return a response or
// an error, never panic.
func FuzzOpenAIResponse(f *testing.F) {
	fuzzSeeds(f)
	var current atomic.Value
	current.Store([]byte(`{}`))
	fake := newFake(&testing.T{}, func(w http.ResponseWriter, r *http.Request) {
		body := current.Load().([]byte)
		if strings.Contains(string(fakeLastBody(r)), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, sseEvent(string(body))+"data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	f.Cleanup(fake.srv.Close)
	m, err := New(Config{APIKey: "k", Model: "gpt-4.1-mini", BaseURL: fake.srv.URL + "/v1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		current.Store(body)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, stream := range []bool{false, true} {
			n := 0
			for r, err := range m.GenerateContent(ctx, userText("hi"), stream) {
				n++
				if err == nil && !r.Partial {
					checkResponse(t, r)
				}
			}
			if n == 0 {
				t.Fatalf("stream=%v: nothing yielded", stream)
			}
		}
	})
}

// fakeLastBody returns the request body the fake server recorded for r (the
// server reads the body before calling the handler).
func fakeLastBody(r *http.Request) []byte {
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return b
}
