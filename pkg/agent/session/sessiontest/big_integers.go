package sessiontest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// testBigIntegers: numbers a tool returned or a state change holds come
// back with every digit from a stored session, through AppendEvent and
// session.AppendEvents, after a later append rewrote the state, and
// through a reopened service: an id above 2^53 (9007199254740993) in a
// function response, nested in it, in the event's state delta and in the
// session state. A backend that decodes them through float64 gives a
// resumed invocation 9007199254740992, and the model hears another number
// than the first run told it (left open in the twenty-second session).
// Function-call arguments come back as float64, as the model adapters give
// them: a resumed invocation runs its pending calls with them.
func testBigIntegers(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	call := func() *session.Event {
		return &session.Event{InvocationID: "inv-1", Author: "support", Content: &model.Content{Role: model.RoleModel,
			Parts: []*model.Part{{FunctionCall: &model.FunctionCall{ID: "c1", Name: "refund_order",
				Args: map[string]any{"order_id": "A-1042", "amount_cents": float64(1299)}}}}}}
	}
	response := func() *session.Event {
		return &session.Event{InvocationID: "inv-1", Author: "support", Content: &model.Content{Role: model.RoleUser,
			Parts: []*model.Part{{FunctionResponse: &model.FunctionResponse{ID: "c1", Name: "refund_order",
				Response: map[string]any{"status": "ok", "order_id": json.Number("9007199254740993"),
					"lines": []any{map[string]any{"sku": int64(9007199254740995)}}}}}}},
			Actions: session.Actions{StateDelta: map[string]any{"last_order_id": int64(9007199254740993)}}}
	}
	later := func() *session.Event {
		return &session.Event{InvocationID: "inv-2", Author: session.AuthorUser, Content: model.NewTextContent(model.RoleUser, "thanks"),
			Actions: session.Actions{StateDelta: map[string]any{"thanked": true}}}
	}
	single, batched := key(t, "big-single"), key(t, "big-batch")
	for _, ev := range []*session.Event{call(), response(), later()} {
		if err := svc.AppendEvent(ctx, single, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := session.AppendEvents(ctx, svc, batched, []*session.Event{call(), response()}); err != nil {
		t.Fatal(err)
	}
	if err := session.AppendEvents(ctx, svc, batched, []*session.Event{later()}); err != nil {
		t.Fatal(err)
	}
	services := map[string]session.Service{"": svc}
	if f.Reopen != nil {
		services[" (reopened)"] = f.Reopen(t)
	}
	for reopened, s := range services {
		for _, k := range []session.Key{single, batched} {
			checkBigIntegers(t, s, k, k.SessionID+reopened)
		}
	}
}

// checkBigIntegers fails t unless session k, as testBigIntegers wrote it,
// reads back with every digit.
func checkBigIntegers(t *testing.T, svc session.Service, k session.Key, name string) {
	t.Helper()
	s, err := svc.Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 3 {
		t.Fatalf("%s: %d events, want 3", name, len(s.Events))
	}
	digits := func(what string, v any, want string) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: marshal %s: %v", name, what, err)
		}
		if string(b) != want {
			t.Errorf("%s: stored %s = %s (%T), want %s", name, what, b, v, want)
		}
	}
	var resp map[string]any
	if frs := s.Events[1].FunctionResponses(); len(frs) == 1 {
		resp = frs[0].Response
	}
	digits("function response", resp, `{"lines":[{"sku":9007199254740995}],"order_id":9007199254740993,"status":"ok"}`)
	digits("event state delta", s.Events[1].Actions.StateDelta, `{"last_order_id":9007199254740993}`)
	digits("state value", s.State["last_order_id"], `9007199254740993`)
	fcs := s.Events[0].FunctionCalls()
	if len(fcs) != 1 {
		t.Fatalf("%s: stored call event has %d calls, want 1", name, len(fcs))
	}
	if got, ok := fcs[0].Args["amount_cents"].(float64); !ok || got != 1299 {
		t.Errorf("%s: stored call argument amount_cents = %#v (%T), want float64 1299 as the model adapters give it", name, fcs[0].Args["amount_cents"], fcs[0].Args["amount_cents"])
	}
}
