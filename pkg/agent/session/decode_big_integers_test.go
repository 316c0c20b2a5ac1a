package session_test

import (
	"encoding/json"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Regression (left open in the twenty-second session, fixed in the
// twenty-fourth): the Redis and NATS KV session stores decoded stored
// events and state with json.Unmarshal, so a tool's id above 2^53
// (9007199254740993) came back as 9007199254740992 to a resumed
// invocation, which sent the model another number than the first run had
// (the conformance subtest BigIntegersKeepTheirDigits proves each
// backend). DecodeEvent, which every store now uses, keeps the digits of
// function responses and state deltas; function-call arguments stay
// float64, as the model adapters give them and as the schema validator
// takes them (it reads a json.Number as a string).
func TestDecodeEventKeepsBigIntegers(t *testing.T) {
	ev := &session.Event{InvocationID: "inv-1", Author: "support", Content: &model.Content{Role: model.RoleUser, Parts: []*model.Part{
		{FunctionCall: &model.FunctionCall{ID: "c1", Name: "refund_order",
			Args: map[string]any{"amount_cents": 1299.0, "lines": []any{map[string]any{"qty": 2.0}}}}},
		{FunctionResponse: &model.FunctionResponse{ID: "c1", Name: "refund_order",
			Response: map[string]any{"order_id": int64(9007199254740993), "lines": []any{map[string]any{"sku": uint64(18446744073709551615)}}}}},
	}}, Actions: session.Actions{StateDelta: map[string]any{"last_order_id": int64(9007199254740993)}}}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var got session.Event
	if err := session.DecodeEvent(raw, &got); err != nil {
		t.Fatal(err)
	}
	text := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if s := text(got.FunctionResponses()[0].Response); s != `{"lines":[{"sku":18446744073709551615}],"order_id":9007199254740993}` {
		t.Errorf("function response = %s", s)
	}
	if s := text(got.Actions.StateDelta); s != `{"last_order_id":9007199254740993}` {
		t.Errorf("state delta = %s", s)
	}
	args := got.FunctionCalls()[0].Args
	if v, ok := args["amount_cents"].(float64); !ok || v != 1299 {
		t.Errorf("argument amount_cents = %#v, want float64 1299", args["amount_cents"])
	}
	if lines, _ := args["lines"].([]any); len(lines) != 1 {
		t.Errorf("argument lines = %#v", args["lines"])
	} else if line, _ := lines[0].(map[string]any); line["qty"] != 2.0 {
		t.Errorf("nested argument qty = %#v, want float64 2", line["qty"])
	}
	// As json.Unmarshal: nothing may follow the value.
	if err := session.DecodeEvent(append(raw, " {}"...), new(session.Event)); err == nil {
		t.Error("DecodeEvent took data after the event")
	}
	var v any
	if err := session.DecodeJSON([]byte(` {"a":[1e400, -0]} `), &v); err != nil || text(v) != `{"a":[1e400,-0]}` {
		t.Errorf("DecodeJSON = %s, %v; want the numbers as written", text(v), err)
	}
}
