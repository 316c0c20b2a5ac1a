package openai

import (
	"encoding/json"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Checked in review, twenty-fifth session (no defect here; the Gemini
// adapter sent null for such a number): a function response read back
// from a store can hold a json.Number that a float64 cannot hold (1e400).
// The OpenAI adapter sends a function response as the tool message's text
// (its JSON encoding), so the number's exact text reaches the model, and a
// number a float64 holds keeps its digits too.
func TestFunctionResponseNumberBeyondFloat64KeepsItsText(t *testing.T) {
	f := newFake(t, jsonHandler(200, `{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}`))
	req := &model.Request{Contents: []*model.Content{
		model.NewTextContent(model.RoleUser, "hi"),
		{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{ID: "c1", Name: "lookup", Args: map[string]any{}}}}},
		{Role: model.RoleUser, Parts: []*model.Part{{FunctionResponse: &model.FunctionResponse{ID: "c1", Name: "lookup", Response: map[string]any{
			"total": json.Number("1e400"), "list": []any{json.Number("-1e400")}, "id": json.Number("123456789012345678901234567890"),
		}}}}},
	}}
	if _, err := one(t, newTestModel(t, f), req); err != nil {
		t.Fatalf("call: %v", err)
	}
	got := dig(t, bodyMap(t, f.last(t)), "messages", 2, "content")
	if want := `{"id":123456789012345678901234567890,"list":[-1e400],"total":1e400}`; got != want {
		t.Errorf("tool message content = %v, want %s", got, want)
	}
}
