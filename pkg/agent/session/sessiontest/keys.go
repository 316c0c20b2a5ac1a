package sessiontest

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// RunKeyEscaping checks that a service keeps sessions apart whose keys would
// collide if their segments were joined unescaped (a ':' or '.' inside an
// id), and that ids with spaces, '%', '*', '>' and non-ASCII round-trip. It
// complements Run.
func RunKeyEscaping(t *testing.T, f Factory) {
	t.Helper()
	svc := f.New(t)
	ctx := context.Background()
	keys := []session.Key{
		{App: "a:b", UserID: "c", SessionID: "d"},
		{App: "a", UserID: "b:c", SessionID: "d"},
		{App: "a", UserID: "b", SessionID: "c:d"},
		{App: "a.b", UserID: "c", SessionID: "d"},
		{App: "a", UserID: "b.c", SessionID: "d"},
		{App: "a/b", UserID: "c", SessionID: "d"},
		{App: "a", UserID: "b/c", SessionID: "d"},
		{App: "a", UserID: "b", SessionID: "c d %3A ü *>{x}"},
	}
	for i, k := range keys {
		for range i + 1 {
			if err := svc.AppendEvent(ctx, k, &session.Event{InvocationID: "i1", Author: "support"}); err != nil {
				t.Fatalf("key %+v: %v", k, err)
			}
		}
	}
	for i, k := range keys {
		s, err := svc.Get(ctx, k)
		if err != nil {
			t.Fatalf("Get(%+v): %v", k, err)
		}
		if s.Key != k || len(s.Events) != i+1 {
			t.Fatalf("Get(%+v) = key %+v with %d events, want %d", k, s.Key, len(s.Events), i+1)
		}
	}
}
