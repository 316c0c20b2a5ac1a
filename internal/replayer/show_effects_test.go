package replayer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/replayer"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// show tells on-call what an in-progress effect means (its worker may have
// died during the call), with the lease and the key the downstream service
// deduplicates by, and what a completed one means.
func TestShowExplainsEffects(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	sh := &replayer.Shown{InvocationID: "inv-1", Effects: []replayer.ShownEffect{
		{Tool: "refund_order", State: idempotency.StateInProgress, Attempts: 1, Key: "idem:support:refund_order:abc", LeaseUntil: now.Add(90 * time.Second)},
		{Tool: "refund_order", State: idempotency.StateInProgress, Attempts: 2, Key: "idem:support:refund_order:def", LeaseUntil: now.Add(-time.Minute)},
		{Tool: "get_order", State: idempotency.StateCompleted, Attempts: 1, Key: "idem:support:get_order:ghi", CompletedAt: now.Add(-time.Hour), Result: []byte(`{"status":"ok"}`)},
	}}
	var b strings.Builder
	sh.Write(&b, now)
	out := b.String()
	for _, want := range []string{
		"tool effects recorded (3):",
		"refund_order in_progress (attempts 1): IN PROGRESS: its lease ends in 1m30s; the call may or may not have reached the downstream service",
		"same idempotency key idem:support:refund_order:abc",
		"refund_order in_progress (attempts 2): IN PROGRESS: its lease has ended",
		"get_order completed (attempts 1): ALREADY DONE at 2026-11-29T02:00:00Z",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show output lacks %q:\n%s", want, out)
		}
	}
}
