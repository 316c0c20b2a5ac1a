package redissession_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
)

// BenchmarkAppendEvent appends model-response events with a small state
// delta to one session: one MULTI/EXEC round trip each.
func BenchmarkAppendEvent(b *testing.B) {
	rdb, prefix := redistest.Client(b)
	svc, err := redissession.New(rdb, redissession.Config{Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	k := session.Key{App: "support", UserID: "u1", SessionID: "bench"}
	text := "Your refund for order A-1042 (12.99 EUR) has been issued; it reaches your card in 3-5 days."
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ev := &session.Event{InvocationID: "inv-1", Author: "support",
			Content: model.NewTextContent(model.RoleModel, text),
			Actions: session.Actions{StateDelta: map[string]any{"turn": fmt.Sprint(i)}}}
		if err := svc.AppendEvent(ctx, k, ev); err != nil {
			b.Fatal(err)
		}
	}
}
