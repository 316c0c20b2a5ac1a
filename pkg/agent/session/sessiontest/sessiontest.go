// Package sessiontest is the conformance suite that every session.Service
// backend runs (in-memory, Redis, NATS KV), in the manner of Watermill's
// pubsub/tests: one exported Run function, many subtests.
package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Factory returns a fresh, empty service for one subtest. Backends isolate
// subtests by key prefix, database or bucket name. Reopen, when non-nil,
// returns a second service instance over the same storage as the last one
// New returned (used to prove durability); in-memory backends leave it nil.
type Factory struct {
	New    func(t *testing.T) session.Service // New returns a fresh, empty service.
	Reopen func(t *testing.T) session.Service // Reopen returns a service over the last New's storage; nil if unsupported.
}

// Run runs the conformance suite against f.
func Run(t *testing.T, f Factory) {
	t.Helper()
	t.Run("GetMissingIsNotFound", func(t *testing.T) { testGetMissing(t, f) })
	t.Run("GetOrCreateIsIdempotent", func(t *testing.T) { testGetOrCreate(t, f) })
	t.Run("AppendKeepsOrderAndContent", func(t *testing.T) { testAppendOrder(t, f) })
	t.Run("AppendKeepsEveryField", func(t *testing.T) { testAppendKeepsFields(t, f) })
	t.Run("StateDelta", func(t *testing.T) { testStateDelta(t, f) })
	t.Run("StateKeepsValueTypes", func(t *testing.T) { testStateKeepsTypes(t, f) })
	t.Run("BigIntegersKeepTheirDigits", func(t *testing.T) { testBigIntegers(t, f) })
	t.Run("AppendEventsKeepsOrderAndState", func(t *testing.T) { testAppendEvents(t, f) })
	t.Run("PartialRejected", func(t *testing.T) { testPartialRejected(t, f) })
	t.Run("ConcurrentAppendsKeepPerWriterOrder", func(t *testing.T) { testConcurrentAppends(t, f) })
	t.Run("SessionsAreIsolated", func(t *testing.T) { testIsolation(t, f) })
	t.Run("KeyEscaping", func(t *testing.T) { RunKeyEscaping(t, f) })
	if f.Reopen != nil {
		t.Run("SurvivesReopen", func(t *testing.T) { testReopen(t, f) })
	}
}

func key(t *testing.T, id string) session.Key {
	return session.Key{App: "support", UserID: "u1", SessionID: id}
}

func testGetMissing(t *testing.T, f Factory) {
	svc := f.New(t)
	_, err := svc.Get(context.Background(), key(t, "missing"))
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Get(missing) error = %v, want ErrNotFound", err)
	}
}

func testGetOrCreate(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	k := key(t, "s1")
	s, err := svc.GetOrCreate(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if s.Key != k || len(s.Events) != 0 {
		t.Fatalf("new session = %+v", s)
	}
	if err := svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i1", Author: session.AuthorUser,
		Content: model.NewTextContent(model.RoleUser, "hi")}); err != nil {
		t.Fatal(err)
	}
	s, err = svc.GetOrCreate(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 1 {
		t.Fatalf("GetOrCreate on existing session returned %d events, want 1", len(s.Events))
	}
	if _, err := svc.GetOrCreate(ctx, session.Key{App: "a"}); err == nil {
		t.Fatal("GetOrCreate with an incomplete key succeeded")
	}
}

func testAppendOrder(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	k := key(t, "order")
	evs := []*session.Event{
		{InvocationID: "i1", Author: session.AuthorUser, Content: model.NewTextContent(model.RoleUser, "refund A-1042")},
		{InvocationID: "i1", Author: "support", Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{
			{FunctionCall: &model.FunctionCall{ID: "c1", Name: "refund_order", Args: map[string]any{"order_id": "A-1042", "amount_cents": float64(1299)}}}}}},
		{InvocationID: "i1", Author: "support", Content: &model.Content{Role: model.RoleUser, Parts: []*model.Part{
			{FunctionResponse: &model.FunctionResponse{ID: "c1", Name: "refund_order", Response: map[string]any{"status": "ok"}}}}}},
		{InvocationID: "i1", Author: "support", Content: model.NewTextContent(model.RoleModel, "done"),
			FinishReason: model.FinishReasonStop, TurnComplete: true},
	}
	for _, e := range evs {
		if err := svc.AppendEvent(ctx, k, e); err != nil {
			t.Fatal(err)
		}
		if e.ID == "" || e.Timestamp.IsZero() {
			t.Fatalf("AppendEvent did not assign id/timestamp: %+v", e)
		}
	}
	s, err := svc.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != len(evs) {
		t.Fatalf("got %d events, want %d", len(s.Events), len(evs))
	}
	for i, e := range s.Events {
		if e.ID != evs[i].ID {
			t.Fatalf("event %d id %q, want %q", i, e.ID, evs[i].ID)
		}
	}
	fc := s.Events[1].FunctionCalls()
	if len(fc) != 1 || fc[0].Name != "refund_order" || fc[0].Args["order_id"] != "A-1042" || fc[0].Args["amount_cents"] != float64(1299) {
		t.Fatalf("function call did not round-trip: %+v", fc)
	}
	fr := s.Events[2].FunctionResponses()
	if len(fr) != 1 || fr[0].Response["status"] != "ok" {
		t.Fatalf("function response did not round-trip: %+v", fr)
	}
	if !s.Events[3].IsFinalResponse() || s.Events[3].FinishReason != model.FinishReasonStop {
		t.Fatalf("final event did not round-trip: %+v", s.Events[3])
	}
	if got := len(s.InvocationEvents("i1")); got != 4 {
		t.Fatalf("InvocationEvents = %d, want 4", got)
	}
}

func testStateDelta(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	k := key(t, "state")
	if err := svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i1", Author: "support",
		Actions: session.Actions{StateDelta: map[string]any{"a": "1", "b": "2"}}}); err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i1", Author: "support",
		Actions: session.Actions{StateDelta: map[string]any{"a": nil, "c": "3"}}}); err != nil {
		t.Fatal(err)
	}
	s, err := svc.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.State["a"]; ok {
		t.Fatalf("nil delta did not delete key a: %v", s.State)
	}
	if s.State["b"] != "2" || s.State["c"] != "3" {
		t.Fatalf("state = %v, want b=2 c=3", s.State)
	}
}

func testPartialRejected(t *testing.T, f Factory) {
	svc := f.New(t)
	err := svc.AppendEvent(context.Background(), key(t, "partial"), &session.Event{InvocationID: "i1", Author: "support", Partial: true})
	if !errors.Is(err, session.ErrPartialEvent) {
		t.Fatalf("append partial error = %v, want ErrPartialEvent", err)
	}
}

func testConcurrentAppends(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	k := key(t, "concurrent")
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e := &session.Event{InvocationID: "i1", Author: "support",
					Content: model.NewTextContent(model.RoleModel, fmt.Sprintf("%d:%d", w, i))}
				if err := svc.AppendEvent(ctx, k, e); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := svc.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != writers*each {
		t.Fatalf("got %d events, want %d", len(s.Events), writers*each)
	}
	next := make([]int, writers)
	for _, e := range s.Events {
		var w, i int
		if _, err := fmt.Sscanf(e.Content.Text(), "%d:%d", &w, &i); err != nil {
			t.Fatal(err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: event %d stored before %d", w, i, next[w])
		}
		next[w]++
	}
}

func testIsolation(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	a, b := key(t, "iso-a"), key(t, "iso-b")
	if err := svc.AppendEvent(ctx, a, &session.Event{InvocationID: "i1", Author: "support"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, b); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("session b sees session a's append: err=%v", err)
	}
}

func testReopen(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	k := key(t, "reopen")
	if err := svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i1", Author: session.AuthorUser,
		Content: model.NewTextContent(model.RoleUser, "persist me"),
		Actions: session.Actions{StateDelta: map[string]any{"x": "y"}}}); err != nil {
		t.Fatal(err)
	}
	again := f.Reopen(t)
	s, err := again.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 1 || s.Events[0].Content.Text() != "persist me" || s.State["x"] != "y" {
		t.Fatalf("reopened session = %+v", s)
	}
}

// testAppendEvents: session.AppendEvents (one write on a BatchAppender)
// stores events in order after what was there, stamps them, and applies
// their state deltas in order (a later event's delta wins).
func testAppendEvents(t *testing.T, f Factory) {
	svc := f.New(t)
	ctx := context.Background()
	k := key(t, "batch")
	text := func(s string) *model.Content { return model.NewTextContent(model.RoleUser, s) }
	first := &session.Event{InvocationID: "inv-1", Author: session.AuthorUser, Content: text("before")}
	if err := svc.AppendEvent(ctx, k, first); err != nil {
		t.Fatal(err)
	}
	evs := []*session.Event{
		{InvocationID: "inv-1", Author: session.AuthorUser, Content: text("one"), Actions: session.Actions{StateDelta: map[string]any{"a": "1", "b": "1"}}},
		{InvocationID: "inv-1", Author: "support", Content: text("two"), Actions: session.Actions{StateDelta: map[string]any{"a": nil}}},
		{InvocationID: "inv-1", Author: "support", Content: text("three"), Actions: session.Actions{StateDelta: map[string]any{"b": "3"}}},
	}
	if err := session.AppendEvents(ctx, svc, k, evs); err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.ID == "" || ev.Timestamp.IsZero() {
			t.Fatalf("event %d not stamped: %+v", i, ev)
		}
	}
	s, err := svc.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range s.Events {
		got = append(got, e.Content.Text())
	}
	if fmt.Sprint(got) != "[before one two three]" {
		t.Fatalf("events = %v, want [before one two three]", got)
	}
	if s.Events[1].ID != evs[0].ID || s.Events[3].ID != evs[2].ID {
		t.Fatalf("stored IDs differ from the stamped ones")
	}
	if _, ok := s.State["a"]; ok || s.State["b"] != "3" {
		t.Fatalf("state = %v, want a deleted and b = 3", s.State)
	}
	if err := session.AppendEvents(ctx, svc, k, []*session.Event{{Author: "x", Partial: true}, {Author: "y"}}); !errors.Is(err, session.ErrPartialEvent) {
		t.Fatalf("a batch with a partial event: %v, want ErrPartialEvent", err)
	}
}
