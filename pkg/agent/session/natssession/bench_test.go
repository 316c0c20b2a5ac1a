package natssession_test

import (
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
)

// BenchmarkAppendEvent appends model-response events with a small state
// delta against an embedded server. Each session entry holds the whole
// session, so the cost grows with the session: sub-benchmarks start a fresh
// session every `events` appends to show typical sizes.
func BenchmarkAppendEvent(b *testing.B) {
	for _, events := range []int{10, 100} {
		b.Run(fmt.Sprintf("session=%d-events", events), func(b *testing.B) {
			js, _, _ := natstest.JetStream(b)
			svc, err := natssession.NewService(ctx, js, natssession.Config{})
			if err != nil {
				b.Fatal(err)
			}
			text := "Your refund for order A-1042 (12.99 EUR) has been issued; it reaches your card in 3-5 days."
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				k := session.Key{App: "support", UserID: "u1", SessionID: fmt.Sprint("bench-", i/events)}
				ev := &session.Event{InvocationID: "inv-1", Author: "support",
					Content: model.NewTextContent(model.RoleModel, text),
					Actions: session.Actions{StateDelta: map[string]any{"turn": fmt.Sprint(i)}}}
				if err := svc.AppendEvent(ctx, k, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
