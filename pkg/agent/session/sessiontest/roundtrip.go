package sessiontest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// testAppendKeepsFields: every field of a stored event comes back as it was
// appended, through AppendEvent and through session.AppendEvents (a
// BatchAppender's own write): the markers a resumed invocation reads back
// (CutOff, Substituted, ShortCircuited, SameCall, Actions.EndInvocation),
// the model response's FinishReason, ErrorCode, ErrorMessage and Usage,
// and a part's ThoughtSignature. A backend whose encoding drops a marker
// passes every other subtest, and a resumed invocation then sends a
// cut-off output back to the model, takes a substituted answer as the end,
// runs past an EndInvocation, or miscounts the model call budget.
func testAppendKeepsFields(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	k := key(t, "fields")
	marked := func(text string) *session.Event {
		return &session.Event{
			InvocationID: "inv-1", Author: "support",
			Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{
				{Text: text, ThoughtSignature: []byte{0, 1, 0xfe, 0xff}}}},
			TurnComplete: true, CutOff: true, Substituted: true, ShortCircuited: true, SameCall: true,
			FinishReason: model.FinishReasonMaxTokens, ErrorCode: model.FinishReasonSafety, ErrorMessage: "blocked: \"safety\" ü",
			Usage:   &model.Usage{PromptTokens: 1234, CandidatesTokens: 56, TotalTokens: 1290},
			Actions: session.Actions{EndInvocation: true, StateDelta: map[string]any{"step": "final"}},
		}
	}
	plain := &session.Event{InvocationID: "inv-1", Author: session.AuthorUser, Content: model.NewTextContent(model.RoleUser, "plain")}
	one := marked("one")
	for _, ev := range []*session.Event{one, plain} {
		if err := svc.AppendEvent(ctx, k, ev); err != nil {
			t.Fatal(err)
		}
	}
	batch := []*session.Event{marked("two"), marked("three")}
	batch[1].CutOff, batch[1].Actions.EndInvocation = false, false // one marker set, another not, in one batch
	if err := session.AppendEvents(ctx, svc, k, batch); err != nil {
		t.Fatal(err)
	}
	want := append([]*session.Event{one, plain}, batch...)
	s, err := svc.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != len(want) {
		t.Fatalf("got %d events, want %d", len(s.Events), len(want))
	}
	for i, got := range s.Events {
		sameEvent(t, i, got, want[i])
	}
}

// sameEvent fails t for each field of got that differs from want.
func sameEvent(t *testing.T, i int, got, want *session.Event) {
	t.Helper()
	check := func(field string, g, w any) {
		t.Helper()
		if !reflect.DeepEqual(g, w) {
			t.Errorf("event %d: stored %s = %v, appended %v", i, field, g, w)
		}
	}
	check("ID", got.ID, want.ID)
	check("InvocationID", got.InvocationID, want.InvocationID)
	check("Author", got.Author, want.Author)
	check("Content", jsonOf(t, got.Content), jsonOf(t, want.Content))
	check("Partial", got.Partial, want.Partial)
	check("TurnComplete", got.TurnComplete, want.TurnComplete)
	check("CutOff", got.CutOff, want.CutOff)
	check("Substituted", got.Substituted, want.Substituted)
	check("ShortCircuited", got.ShortCircuited, want.ShortCircuited)
	check("SameCall", got.SameCall, want.SameCall)
	check("FinishReason", got.FinishReason, want.FinishReason)
	check("ErrorCode", got.ErrorCode, want.ErrorCode)
	check("ErrorMessage", got.ErrorMessage, want.ErrorMessage)
	check("Usage", jsonOf(t, got.Usage), jsonOf(t, want.Usage))
	check("Actions.EndInvocation", got.Actions.EndInvocation, want.Actions.EndInvocation)
	check("Actions.StateDelta", normalDelta(t, got.Actions.StateDelta), normalDelta(t, want.Actions.StateDelta))
	if !got.Timestamp.Equal(want.Timestamp) {
		t.Errorf("event %d: stored Timestamp = %v, appended %v", i, got.Timestamp, want.Timestamp)
	}
}

// testStateKeepsTypes: state values keep their JSON types: a number, a
// bool, a nested object and a list come back as what a JSON round trip of
// the delta gives (compared after one: a number may come back as a
// json.Number, session.DecodeJSON), in the session state and in the
// stored event's delta, through AppendEvent and session.AppendEvents. A
// backend that stores values as their text passes the string-only
// StateDelta subtest, and a callback's type assertion on a counter or a
// flag fails after the first reload.
func testStateKeepsTypes(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	delta := func() map[string]any {
		return map[string]any{
			"count": 3, "ratio": 2.5, "negative": -7, "vip": true, "opted_out": false,
			"digits": "3", "yes": "true", "empty": "",
			"plan": map[string]any{"tier": "gold", "seats": 5, "trial": false,
				"limits": map[string]any{"daily": 100}, "tags": []any{"a", 1, true}},
			"list": []any{1, "two", false, map[string]any{"k": 2.25}},
		}
	}
	single, batched := key(t, "types"), key(t, "types-batch")
	if err := svc.AppendEvent(ctx, single, &session.Event{InvocationID: "inv-1", Author: "support",
		Actions: session.Actions{StateDelta: delta()}}); err != nil {
		t.Fatal(err)
	}
	if err := session.AppendEvents(ctx, svc, batched, []*session.Event{
		{InvocationID: "inv-1", Author: "support", Actions: session.Actions{StateDelta: map[string]any{"count": "first"}}},
		{InvocationID: "inv-1", Author: "support", Actions: session.Actions{StateDelta: delta()}},
	}); err != nil {
		t.Fatal(err)
	}
	want := normalJSON(t, delta())
	for _, k := range []session.Key{single, batched} {
		s, err := svc.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if got := normalJSON(t, s.State); !reflect.DeepEqual(got, want) {
			t.Errorf("session %s: state = %#v\nwant (after a JSON round trip) %#v", k.SessionID, got, want)
		}
		last := s.Events[len(s.Events)-1]
		if got := normalJSON(t, last.Actions.StateDelta); !reflect.DeepEqual(got, want) {
			t.Errorf("session %s: stored event's delta = %#v\nwant (after a JSON round trip) %#v", k.SessionID, got, want)
		}
	}
}

// jsonOf returns v's JSON text.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	return string(b)
}

// normalDelta is normalJSON of a state delta, nil when it is empty (a
// backend may decode an absent delta as an empty map).
func normalDelta(t *testing.T, d map[string]any) any {
	t.Helper()
	if len(d) == 0 {
		return nil
	}
	return normalJSON(t, d)
}

// normalJSON returns v after a JSON round trip (numbers become float64,
// objects map[string]any), so that values a backend decoded from JSON
// compare equal to the ones appended.
func normalJSON(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(jsonOf(t, v)), &out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return out
}
