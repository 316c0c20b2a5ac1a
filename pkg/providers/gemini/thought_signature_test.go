package gemini

import (
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Gemini (2.5 and 3, thinking on) attaches a thoughtSignature to the part
// that holds a functionCall. The API requires the model turn to be sent
// back with its signatures on the next request; Gemini 3 rejects a
// function-calling turn whose functionCall part lacks it with 400
// INVALID_ARGUMENT. The fake below answers the first call with such a part
// and, like Gemini 3, refuses a follow-up whose functionCall part comes back
// without its signature. The agent loop sends back exactly the Content the
// adapter returned, so a tool step must round-trip the signature.
func TestFunctionCallThoughtSignatureRoundTrips(t *testing.T) {
	const sig = "CiQB0e2Kb3VnZW50ZmxlZXQ="
	var calls atomic.Int32
	var f *fakeGemini
	f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if calls.Add(1) == 1 {
			_, _ = io.WriteString(w, `{"candidates": [{"content": {"role": "model", "parts": [
			    {"functionCall": {"name": "get_order", "args": {"order_id": "A-1042"}}, "thoughtSignature": "`+sig+`"}]},
			  "finishReason": "STOP", "index": 0}],
			  "usageMetadata": {"promptTokenCount": 212, "candidatesTokenCount": 18, "totalTokenCount": 230, "thoughtsTokenCount": 41},
			  "modelVersion": "gemini-3-pro-preview", "responseId": "r-1"}`)
			return
		}
		var body struct {
			Contents []struct {
				Role  string `json:"role"`
				Parts []struct {
					FunctionCall     json.RawMessage `json:"functionCall"`
					ThoughtSignature string          `json:"thoughtSignature"`
				} `json:"parts"`
			} `json:"contents"`
		}
		f.mu.Lock()
		raw := f.reqs[len(f.reqs)-1].Body
		f.mu.Unlock()
		_ = json.Unmarshal(raw, &body)
		for _, c := range body.Contents {
			for _, p := range c.Parts {
				if c.Role == "model" && p.FunctionCall != nil && p.ThoughtSignature != sig {
					w.WriteHeader(400)
					_, _ = io.WriteString(w, `{"error": {"code": 400, "message": "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance.", "status": "INVALID_ARGUMENT"}}`)
					return
				}
			}
		}
		_, _ = io.WriteString(w, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "Order A-1042 is on its way."}]}, "finishReason": "STOP", "index": 0}], "responseId": "r-2"}`)
	})
	m := newTestModel(t, f, func(c *Config) { c.Model = "gemini-3-pro-preview" })

	req := userText("where is A-1042?")
	first, err := one(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.FunctionCalls()) != 1 {
		t.Fatalf("first response = %+v", first.Content)
	}
	// The agent loop's next request: the history, the model turn as the
	// adapter returned it, and the tool's result.
	req.Contents = append(req.Contents, first.Content, &model.Content{Role: model.RoleUser, Parts: []*model.Part{{
		FunctionResponse: &model.FunctionResponse{Name: "get_order", Response: map[string]any{"status": "shipped"}}}}})
	second, err := one(t, m, req)
	if err != nil {
		t.Fatalf("tool step refused: class %s: %v", taxonomy.ClassifyError(err), err)
	}
	if second.Content.Text() == "" {
		t.Fatalf("second response = %+v", second)
	}
}
