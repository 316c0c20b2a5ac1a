package gemini

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// toolTurn is a request whose last turn answers call c1 with resp.
func toolTurn(resp map[string]any) *model.Request {
	return &model.Request{Contents: []*model.Content{
		model.NewTextContent(model.RoleUser, "hi"),
		{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: &model.FunctionCall{ID: "c1", Name: "lookup", Args: map[string]any{}}}}},
		{Role: model.RoleUser, Parts: []*model.Part{{FunctionResponse: &model.FunctionResponse{ID: "c1", Name: "lookup", Response: resp}}}},
	}}
}

// Regression (found in review, twenty-fifth session): a wrapped tool's
// result read back from a store (decoded with UseNumber) can hold a
// json.Number that a float64 cannot hold (1e400). The genai SDK turns the
// request into generic JSON values through float64 and sent null for it,
// silently: the call went through and the model saw null where the tool
// had answered. The adapter now sends such a number as its decimal text (a
// JSON string); a number a float64 holds goes as it is, and the caller's
// maps are neither changed nor copied when nothing needs a change.
func TestFunctionResponseNumberBeyondFloat64IsSentAsText(t *testing.T) {
	f := newFake(t, jsonHandler(200, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}]}`))
	m := newTestModel(t, f)
	inner := map[string]any{"big": json.Number("-1e400"), "fine": json.Number("2.5")}
	resp := map[string]any{
		"total": json.Number("1e400"),
		"count": json.Number("12"),
		"list":  []any{json.Number("1E+400"), json.Number("7"), "text"},
		"inner": inner,
		"plain": map[string]any{"n": json.Number("3")},
	}
	before := mustJSON(t, resp)
	if _, err := one(t, m, toolTurn(resp)); err != nil {
		t.Fatalf("call: %v", err)
	}
	got := dig(t, bodyMap(t, f.last(t)), "contents", 2, "parts", 0, "functionResponse", "response")
	want := map[string]any{
		"total": "1e400",
		"count": 12.0,
		"list":  []any{"1E+400", 7.0, "text"},
		"inner": map[string]any{"big": "-1e400", "fine": 2.5},
		"plain": map[string]any{"n": 3.0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sent response = %v, want %v (a number beyond float64 as its text, the others as they are)", got, want)
	}
	if after := mustJSON(t, resp); after != before {
		t.Errorf("the caller's response changed: %s, was %s", after, before)
	}

	// Nothing to change: the same map, not a copy (hot path).
	same := map[string]any{"n": json.Number("1e300"), "l": []any{json.Number("-0.5"), 1.0}, "m": map[string]any{"s": "x"}}
	if out := sendableResponse(same); reflect.ValueOf(out).Pointer() != reflect.ValueOf(same).Pointer() {
		t.Error("a response without a number beyond float64 was copied")
	}
	// Only the maps and slices on the way to a replaced number are copied.
	plain := resp["plain"].(map[string]any)
	out := sendableResponse(resp)
	if reflect.ValueOf(out["plain"]).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Error("a nested map without a number beyond float64 was copied")
	}
	// An invalid number is not made a string: the request is refused, as
	// before.
	if _, err := one(t, m, toolTurn(map[string]any{"n": json.Number("0x1p9999")})); err == nil {
		t.Error("a json.Number that is no JSON number was sent")
	}
}
