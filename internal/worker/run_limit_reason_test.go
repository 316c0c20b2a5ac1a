package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, seventeenth session): TestRunLimitReasonFitsTheDLQReason: the DLQ publisher sanitises a
// reason with tool.SanitizeString, which caps it at MaxErrorStringLen (200)
// runes. The new run-limit reason is 202 runes before "; last error: …", so
// the entry on-call reads ends "…say whi…" and any last error is cut off.
func TestRunLimitReasonFitsTheDLQReason(t *testing.T) {
	e := newEnv(t)
	effect := tool.MustFunc("ledger", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		return nil, &agent.SessionError{Op: "append", Err: errors.New("down")}
	})
	var steps []agenttest.Step
	for range 10 {
		steps = append(steps, agenttest.Reply(agenttest.Call("ledger", nil)))
	}
	e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(steps...), effect), worker.Config{MaxDeliveries: 2})
	e.publish(request("inv-limit-reason", "s1", "hi"), nil)
	if res := e.await("inv-limit-reason"); res.Status != envelope.StatusDeadLettered {
		t.Fatalf("result = %+v", res)
	}
	en := e.dlqEntries()
	if len(en) != 1 {
		t.Fatalf("dlq = %+v", en)
	}
	if r := en[0].Reason; strings.HasSuffix(r, "…") {
		t.Errorf("run-limit reason was cut at the DLQ reason cap (%d runes max): %q", tool.MaxErrorStringLen, r)
	}
	eventually(t, "acked", func() bool { return e.pending() == 0 })
}
