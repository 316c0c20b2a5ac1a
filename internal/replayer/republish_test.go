package replayer

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// A replay message carries the original request and the replay headers; a
// CALL_BUDGET entry (replayed only when forced) also asks for a fresh
// budget, other classes do not.
func TestReplayMsg(t *testing.T) {
	sc := streams.Config{}.WithDefaults()
	first := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		class string
		fresh string
	}{{"CALL_BUDGET", "true"}, {"SERVER", ""}, {"UNKNOWN", ""}} {
		t.Run(c.class, func(t *testing.T) {
			req, _ := request("inv-7", "A-1042").Encode()
			e := &dlq.Entry{InvocationID: "inv-7", Agent: "support", Class: c.class, ReplayCount: 2, FirstFailedAt: first}
			e.SetRequest(req)
			m := ReplayMsg(sc, e)
			if m.Subject != sc.RequestSubject("support") || string(m.Data) != string(req) {
				t.Fatalf("subject %q data %q", m.Subject, m.Data)
			}
			for h, want := range map[string]string{
				envelope.HeaderMsgID: "replay:inv-7:3", envelope.HeaderResume: "true", envelope.HeaderReplayCount: "3",
				envelope.HeaderFreshBudget: c.fresh, "Agent-First-Failed-At": first.Format(time.RFC3339Nano),
			} {
				if got := m.Header.Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
		})
	}
}
