package gemini

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

func fuzzSeeds(f *testing.F) {
	for _, tc := range inBandCases {
		f.Add([]byte(tc.body))
	}
	for _, s := range []string{
		textOK, `{}`, `null`, `[]`, `"x"`, `{"candidates": null}`, `{"candidates": [null]}`,
		`{"candidates": [{"content": {"parts": [null, {"functionCall": null}, {"functionCall": {"args": null}}]}}]}`,
		`{"candidates": [{"content": {"parts": "nope"}}]}`,
		`{"candidates": [{"citationMetadata": "x", "finishReason": 7}]}`,
		`{"candidates": "x", "promptFeedback": []}`,
		`{"usageMetadata": {"totalTokenCount": "many"}}`,
		`{"promptFeedback": {"blockReason": ""}}`,
		`{"candidates": [{"content": {"parts": [{"text": "a", "thought": true}, {"functionResponse": {"name": "f", "response": {"a": [1, {"b": null}]}}}]}, "finishReason": "STOP"}]}`,
	} {
		f.Add([]byte(s))
	}
}

// checkResponse holds for every mapped response, whatever the input.
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
}

// sdkUnmarshal decodes with the SDK's own UnmarshalJSON, which panics on
// some inputs (e.g. a JSON null); those inputs are not the mapper's concern.
func sdkUnmarshal(body []byte, resp *genai.GenerateContentResponse) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return json.Unmarshal(body, resp) == nil
}

// FuzzFromGenAI feeds arbitrary JSON, decoded into the SDK type, through the
// mapping function.
func FuzzFromGenAI(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var resp genai.GenerateContentResponse
		if !sdkUnmarshal(body, &resp) {
			return
		}
		checkResponse(t, FromGenAI(&resp))
	})
}

// FuzzGeminiResponse feeds arbitrary bodies through a real HTTP round trip,
// so the SDK's own decoding and conversion run too: the adapter must return
// a response or an error, never panic.
func FuzzGeminiResponse(f *testing.F) {
	fuzzSeeds(f)
	var current atomic.Value
	current.Store([]byte(`{}`))
	fake := newFake(&testing.T{}, func(w http.ResponseWriter, r *http.Request) {
		body := current.Load().([]byte)
		if strings.Contains(r.URL.Path, "streamGenerateContent") {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: "+strings.ReplaceAll(string(body), "\n", " ")+"\r\n\r\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	f.Cleanup(fake.srv.Close)
	m, err := New(context.Background(), Config{APIKey: "k", Model: "gemini-2.5-flash", BaseURL: fake.srv.URL})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		current.Store(body)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, stream := range []bool{false, true} {
			var final *model.Response
			n := 0
			for r, err := range m.GenerateContent(ctx, userText("hi"), stream) {
				n++
				if err != nil {
					continue
				}
				if !r.Partial {
					final = r
				}
			}
			if n == 0 {
				t.Fatalf("stream=%v: nothing yielded", stream)
			}
			if final != nil {
				checkResponse(t, final)
				if stream && final.FinishReason == "" && final.ErrorCode == "" {
					t.Fatalf("complete stream response without finish reason or error code: %+v", final)
				}
			}
		}
	})
}
